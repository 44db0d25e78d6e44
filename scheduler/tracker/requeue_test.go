package tracker

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// recordingRequeue records what the tracker tells the requeuer.
type recordingRequeue struct {
	freed     []string
	forgotten []types.UID
}

func (r *recordingRequeue) Freed(node string)    { r.freed = append(r.freed, node) }
func (r *recordingRequeue) Forget(uid types.UID) { r.forgotten = append(r.forgotten, uid) }

// renewedAfter is a run in which node n1's Lease, seen renewed at epoch,
// is renewed again after d.
func renewedAfter(d time.Duration) func(f *fixture) {
	return func(f *fixture) {
		old := lease("n1", epoch)
		f.seenLease(old)
		f.clock.Step(d)
		f.tracker.leaseHandler().OnUpdate(old, lease("n1", epoch.Add(d)))
	}
}

func TestTrackerTellsRequeue(t *testing.T) {
	tests := []struct {
		name       string
		run        func(f *fixture)
		wantFreed  string // the node whose GPUs were freed
		wantForget bool
	}{
		{
			name: "pod deletion frees GPUs and forgets the pod",
			run: func(f *fixture) {
				p := pod("p", "u1", corev1.PodRunning)
				f.addPod(p)
				f.addAllocation(allocation("p", "a1", "u1", gpuv1alpha1.AllocationAllocated))
				f.tracker.podHandler().OnDelete(p)
			},
			wantFreed: "n1", wantForget: true,
		},
		{
			name:      "pod completion frees GPUs",
			run:       podSucceeded,
			wantFreed: "n1",
		},
		{
			name:      "failed allocation frees GPUs",
			run:       allocationMovedTo(corev1.PodPending, gpuv1alpha1.AllocationFailed),
			wantFreed: "n1",
		},
		{
			name: "an allocation being served frees nothing",
			run:  allocationMovedTo(corev1.PodPending, gpuv1alpha1.AllocationAllocated),
		},
		{
			name:      "a renewal after a stale Lease may let the node take pods",
			run:       renewedAfter(10 * time.Minute),
			wantFreed: "n1",
		},
		{
			name: "a renewal of a fresh Lease changes nothing",
			run:  renewedAfter(10 * time.Second),
		},
		{
			name: "a new GPUNode may take pods",
			run: func(f *fixture) {
				f.tracker.gpuNodeHandler().OnAdd(&gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}, false)
			},
			wantFreed: "n2",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			r := &recordingRequeue{}
			f.tracker.requeue = r
			tc.run(f)
			if tc.wantFreed == "" && len(r.freed) > 0 || tc.wantFreed != "" && !slices.Equal(r.freed, []string{tc.wantFreed}) {
				t.Errorf("freed %q, want %q", r.freed, tc.wantFreed)
			}
			if (len(r.forgotten) > 0) != tc.wantForget {
				t.Errorf("forgot %v, want forget: %v", r.forgotten, tc.wantForget)
			}
		})
	}
}

func TestMayTakeMore(t *testing.T) {
	base := func() *gpuv1alpha1.GPUNode {
		gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
		gn.Status.Devices = []gpuv1alpha1.GPUDevice{{UUID: "gpu0", MemoryMiB: 80000, Health: gpuv1alpha1.GPUHealthy}}
		gn.Status.Conditions = []metav1.Condition{{Type: gpuv1alpha1.GPUNodeReady, Status: metav1.ConditionTrue}}
		return gn
	}
	tests := []struct {
		name   string
		change func(old, gn *gpuv1alpha1.GPUNode)
		want   bool
	}{
		{name: "the same status changes nothing", change: func(_, _ *gpuv1alpha1.GPUNode) {}},
		{name: "the stale mark changes nothing", change: func(_, gn *gpuv1alpha1.GPUNode) {
			gn.Status.Conditions[0].Status = metav1.ConditionUnknown
		}},
		{name: "a GPU healthy again", change: func(old, _ *gpuv1alpha1.GPUNode) { old.Status.Devices[0].Health = gpuv1alpha1.GPUUnhealthy }, want: true},
		{name: "a GPU uncordoned", change: func(old, _ *gpuv1alpha1.GPUNode) { old.Spec.CordonedDevices = []string{"gpu0"} }, want: true},
		{name: "the device plugin ready again", change: func(old, _ *gpuv1alpha1.GPUNode) { old.Status.Conditions[0].Status = metav1.ConditionFalse }, want: true},
		{name: "the device plugin ready after the stale mark", change: func(old, _ *gpuv1alpha1.GPUNode) { old.Status.Conditions[0].Status = metav1.ConditionUnknown }, want: true},
		{name: "HAMi-core installed again", change: func(old, gn *gpuv1alpha1.GPUNode) {
			old.Status.Conditions = append(old.Status.Conditions, metav1.Condition{Type: gpuv1alpha1.GPUNodeHAMiCoreReady, Status: metav1.ConditionFalse, Reason: gpuv1alpha1.HAMiCoreLibraryMissing, Message: "no libvgpu.so"})
			gn.Status.Conditions = append(gn.Status.Conditions, metav1.Condition{Type: gpuv1alpha1.GPUNodeHAMiCoreReady, Status: metav1.ConditionTrue, Reason: gpuv1alpha1.HAMiCoreInstalled})
		}, want: true},
		{name: "HAMi-core gone", change: func(old, gn *gpuv1alpha1.GPUNode) {
			gn.Status.Conditions = append(gn.Status.Conditions, metav1.Condition{Type: gpuv1alpha1.GPUNodeHAMiCoreReady, Status: metav1.ConditionFalse, Reason: gpuv1alpha1.HAMiCoreLibraryMissing, Message: "no libvgpu.so"})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old, gn := base(), base()
			tc.change(old, gn)
			if got := mayTakeMore(old, gn); got != tc.want {
				t.Errorf("mayTakeMore = %v, want %v", got, tc.want)
			}
		})
	}
}

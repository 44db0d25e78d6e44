package tracker

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	tesserafake "github.com/tessera-gpu/tessera/generated/clientset/versioned/fake"
	"github.com/tessera-gpu/tessera/scheduler/inflight"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// TestTurnVerifier reads a turn's allocation and pod from the API, which
// here holds what no event brought: the turn ends only when the device
// plugin can no longer serve it.
func TestTurnVerifier(t *testing.T) {
	tests := []struct {
		name     string
		inView   bool
		alloc    *gpuv1alpha1.GPUAllocation
		pod      *corev1.Pod
		inFlight bool
		// lost is a turn whose bind lost the answer to the create of pod
		// p's allocation: the view does not hold it, and no allocation is
		// attached.
		lost bool
	}{
		{name: "served allocation ends the turn", inView: true,
			alloc: allocation("p", "a1", "p1", gpuv1alpha1.AllocationAllocated), pod: pod("p", "p1", corev1.PodRunning)},
		{name: "failed allocation ends the turn", inView: true,
			alloc: allocation("p", "a1", "p1", gpuv1alpha1.AllocationFailed), pod: pod("p", "p1", corev1.PodPending)},
		{name: "deleted allocation ends the turn", inView: true, pod: pod("p", "p1", corev1.PodPending)},
		{name: "replaced allocation ends the turn", inView: true,
			alloc: allocation("p", "a2", "p1", gpuv1alpha1.AllocationPending), pod: pod("p", "p1", corev1.PodPending)},
		{name: "pending allocation of a deleted pod ends the turn", inView: true,
			alloc: allocation("p", "a1", "p1", gpuv1alpha1.AllocationPending)},
		{name: "pending allocation of a replaced pod ends the turn", inView: true,
			alloc: allocation("p", "a1", "p1", gpuv1alpha1.AllocationPending), pod: pod("p", "p2", corev1.PodPending)},
		{name: "pending allocation of a finished pod ends the turn", inView: true,
			alloc: allocation("p", "a1", "p1", gpuv1alpha1.AllocationPending), pod: pod("p", "p1", corev1.PodFailed)},
		{name: "pending allocation of a pod still there stays in flight", inView: true,
			alloc: allocation("p", "a1", "p1", gpuv1alpha1.AllocationPending), pod: pod("p", "p1", corev1.PodPending), inFlight: true},
		{name: "a pod the view does not know stays in flight", inFlight: true},
		// Its bind lost the answer to its allocation's create.
		{name: "lost create: no allocation ends the turn", lost: true, pod: pod("p", "p1", corev1.PodPending)},
		{name: "lost create: another pod's allocation of the name ends the turn", lost: true,
			alloc: allocation("p", "a1", "p0", gpuv1alpha1.AllocationPending), pod: pod("p", "p1", corev1.PodPending)},
		{name: "lost create: the pod's allocation on another node ends the turn", lost: true,
			alloc: onNode(allocation("p", "a1", "p1", gpuv1alpha1.AllocationPending), "n2"), pod: pod("p", "p1", corev1.PodPending)},
		{name: "lost create: the pending allocation it made stays in flight", lost: true,
			alloc: allocation("p", "a1", "p1", gpuv1alpha1.AllocationPending), pod: pod("p", "p1", corev1.PodPending), inFlight: true},
		{name: "lost create: the allocation it made, of a deleted pod, ends the turn", lost: true,
			alloc: allocation("p", "a1", "p1", gpuv1alpha1.AllocationPending)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			kube, tessera := kubefake.NewClientset(), tesserafake.NewClientset()
			if tt.pod != nil {
				if err := kube.Tracker().Add(tt.pod); err != nil {
					t.Fatal(err)
				}
			}
			if tt.alloc != nil {
				if err := tessera.Tracker().Add(tt.alloc); err != nil {
					t.Fatal(err)
				}
			}
			v := view.New()
			if tt.inView {
				v.Place(allocation("p", "a1", "p1", gpuv1alpha1.AllocationPending))
			}
			turn := inflight.Turn{Node: "n1", PodUID: "p1", Allocation: "a1"}
			if tt.lost {
				turn.Allocation, turn.Lost = "", types.NamespacedName{Namespace: "ns", Name: "p"}
			}
			inFlight, err := NewTurnVerifier(v, kube, tessera)(ctx, turn)
			if err != nil {
				t.Fatal(err)
			}
			if inFlight != tt.inFlight {
				t.Errorf("in flight = %v, want %v", inFlight, tt.inFlight)
			}
		})
	}
}

// onNode is the allocation placed on node instead.
func onNode(a *gpuv1alpha1.GPUAllocation, node string) *gpuv1alpha1.GPUAllocation {
	a.Spec.NodeName = node
	return a
}

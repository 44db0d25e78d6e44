package waiters

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// activated records the keys of the pods activated.
type activated []string

func (a *activated) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	for key := range pods {
		*a = append(*a, key)
	}
}

// take returns the keys recorded, sorted, and forgets them.
func (a *activated) take() []string {
	out := slices.Sorted(slices.Values(*a))
	*a = nil
	return out
}

// silent tells held pods nothing.
type silent struct{}

func (silent) Tell(*v1.Pod, string) {}

// TestSweepReleasesWhatAMissedPlayLeft holds a pod on a full GPU beside
// a pod that waits unheld and fits the room left, frees the GPU in the
// view and the index without playing its node, as a free whose play was
// missed, and checks that a sweep then plays the node as the free would
// have, and that a sweep before, when only the unheld pod fits, activates
// nothing: that pod waits on what kube-scheduler judges.
func TestSweepReleasesWhatAMissedPlayLeft(t *testing.T) {
	const node = "node-1"
	clk := testingclock.NewFakePassiveClock(time.Now())
	v := view.New()
	v.SetGPUNode(&gpuv1alpha1.GPUNode{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Status: gpuv1alpha1.GPUNodeStatus{Devices: []gpuv1alpha1.GPUDevice{{
			UUID: "GPU-0", Model: "Tesla T4", MemoryMiB: 15360, Cores: 100, ShareLimit: 10, Health: gpuv1alpha1.GPUHealthy,
		}}},
	})
	v.SetLease(node, clk.Now())
	v.Place(&gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: "fill", Namespace: "default", UID: "alloc-fill"},
		Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: "fill", NodeName: node, Containers: []gpuv1alpha1.ContainerAllocation{{
			Name: "main", Kind: gpuv1alpha1.ContainerApp, Devices: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-0", MemoryMiB: 10240}},
		}}},
	})
	act := &activated{}
	q := NewQueue(act, klog.Background(), v, clk, view.Rules{HeartbeatMaxAge: time.Minute})
	gate := NewGate("tessera-scheduler", q, NewPriorities(q), silent{}, nil)

	// A pod that fits by its GPUs and waits, unheld, on what else it
	// asks.
	unheld := gpuPod("unheld", 1000)
	q.Waiting(unheld, request(t, unheld))
	q.Failed(unheld.UID)
	held := gpuPod("held", 10000)
	held.Spec.SchedulerName = "tessera-scheduler"
	if isHeld, why := gate.Judge(held, request(t, held), view.Rules{}, v); !isHeld {
		t.Fatal("the pod passed the gate on a full GPU")
	} else if why == "" {
		t.Fatal("the pod is held without a reason")
	}
	q.sweep()
	if got := act.take(); len(got) != 0 {
		t.Fatalf("a sweep with no GPU free for the held pod activated %v", got)
	}

	v.Release(types.UID("fill"))
	q.Index().Freed(node)
	q.sweep()
	if got, want := act.take(), []string{"default/held", "default/unheld"}; !slices.Equal(got, want) {
		t.Errorf("the sweep activated %v, want %v", got, want)
	}
	if _, isHeld := q.Holds(held.UID); isHeld {
		t.Error("the pod the sweep released is still held")
	}
}

package gangfit

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// TestAdmittedWhenRoomFrees pins that a free that makes room for
// Workloads the check sent back admits them at once, while Kueue still
// waits to try them again: the longest waiting first and only as many as
// the room holds, with the check Ready and Kueue's retry time moved to
// now; and that nothing is written for one that still does not fit.
func TestAdmittedWhenRoomFrees(t *testing.T) {
	f := newFixture(t)
	// Sent back: 2 × 40000 MiB do not fit four fragments of 30000 MiB.
	// Kueue keeps their quota and waits until their retry time.
	for _, name := range []string{"first", "second"} {
		f.sync(t, f.setWorkload(t, name, 2, 40000, statePending, 0))
		f.setBackingOff(t, name)
		f.clock.Step(time.Second)
	}
	f.applied = nil
	f.recheck(t)
	if len(f.applied) != 0 || len(f.retried) != 0 {
		t.Fatalf("with no room freed the check wrote %+v and moved the retry of %v", f.applied, f.retried)
	}

	// A GPU frees whole: room for one Workload of the two.
	f.freeFragment("gpu0")
	f.recheck(t)
	if !slices.Equal(f.retried, []string{"first"}) || len(f.applied) != 1 || f.applied[0].State != stateReady {
		t.Errorf("after the free the check applied %+v and moved the retry of %v, want first Ready and its retry now: the longest waiting, and only as many as fit", f.applied, f.retried)
	}
	if got := f.view.GangHeld("uid-first/main"); got != 2 {
		t.Errorf("room held for %d pods of first, want 2", got)
	}

	// The second gets in on the next free that makes room for it.
	f.applied, f.retried = nil, nil
	f.freeFragment("gpu1")
	f.recheck(t)
	if !slices.Equal(f.retried, []string{"second"}) {
		t.Errorf("after the second free the check moved the retry of %v, want [second]", f.retried)
	}
}

// setBackingOff puts the Workload in Kueue's wait after the check's Retry:
// its quota still reserved, its retry time 15 s away.
func (f *fixture) setBackingOff(t *testing.T, name string) {
	t.Helper()
	retryAt := metav1.NewTime(f.clock.Now().Add(15 * time.Second))
	f.setWorkloadWith(t, name, 2, 40000, stateRetry, 0, func(w *workload) {
		w.Status.RequeueState = &struct {
			RequeueAt *metav1.Time `json:"requeueAt"`
		}{RequeueAt: &retryAt}
	})
}

// recheck plays a free: the check queues the Workloads it sent back, and
// its worker takes them in the queue's order.
func (f *fixture) recheck(t *testing.T) {
	t.Helper()
	f.c.queueWaiting()
	for f.c.queue.Len() > 0 {
		key, _ := f.c.queue.Get()
		f.sync(t, key)
		f.c.queue.Done(key)
	}
}

// freeFragment ends the earlier pod on the GPU, as the tracker does when
// its allocation goes.
func (f *fixture) freeFragment(uuid string) {
	f.view.ReleaseAllocation(&gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "fragment-" + uuid, UID: types.UID("a-" + uuid)},
		Spec:       gpuv1alpha1.GPUAllocationSpec{PodUID: types.UID("p-" + uuid), NodeName: "n1"},
	})
}

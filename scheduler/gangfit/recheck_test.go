package gangfit

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// TestRetriedWhenRoomFrees pins that a free that makes room for
// Workloads the check sent back asks Kueue to try them at once, the
// longest waiting first and only as many as the room holds, and holds
// nothing once the pass is over.
func TestRetriedWhenRoomFrees(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// Sent back: 2 × 40000 MiB do not fit four fragments of 30000 MiB.
	for _, name := range []string{"first", "second"} {
		f.sync(t, f.setWorkload(t, name, 2, 40000, statePending, 0))
		f.clock.Step(time.Second)
	}
	// Kueue evicts them and waits until their retry time.
	retryAt := metav1.NewTime(f.clock.Now().Add(15 * time.Second))
	for _, name := range []string{"first", "second"} {
		f.setWorkloadWith(t, name, 2, 40000, statePending, 0, func(w *workload) {
			w.Status.Conditions = nil
			w.Status.RequeueState = &struct {
				RequeueAt *metav1.Time `json:"requeueAt"`
			}{RequeueAt: &retryAt}
		})
	}

	f.c.recheckWaiting(ctx)
	if len(f.retried) != 0 {
		t.Fatalf("with no room freed the check asked Kueue to retry %v", f.retried)
	}

	// A GPU frees whole: room for one Workload of the two.
	f.freeFragment("gpu0")
	f.c.Freed("n1")
	f.c.recheckWaiting(ctx)
	if !slices.Equal(f.retried, []string{"first"}) {
		t.Errorf("after the free the check asked Kueue to retry %v, want [first]: the longest waiting, and only as many as fit", f.retried)
	}
	if got := f.view.Used("team").MemoryMiB; got != 0 {
		t.Errorf("the pass left %d MiB held", got)
	}

	// The second is tried on the next free that makes room for it, and
	// the first is no longer waiting.
	f.retried = nil
	f.freeFragment("gpu1")
	f.c.recheckWaiting(ctx)
	if !slices.Equal(f.retried, []string{"second"}) {
		t.Errorf("after the second free the check asked Kueue to retry %v, want [second]", f.retried)
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

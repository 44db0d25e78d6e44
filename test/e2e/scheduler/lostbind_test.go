package scheduler

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tessera-gpu/tessera/test/framework"
)

// TestLostBindAnswerKeepsTheGPUs has the extender lose the answer to a
// pod's binding, which the API server makes a moment later (before
// kube-scheduler would try the pod again), while the extender's watch of
// GPUAllocations lags, as after an API server restart: the allocation it
// wrote is not yet in its view. The GPUs it reserved for the pod must stay
// reserved, so a second pod that fits only in their room waits, rather
// than being placed on GPUs the first pod holds. Once the first pod is
// deleted, the second is placed.
func TestLostBindAnswerKeepsTheGPUs(t *testing.T) {
	faults := &apiFaults{}
	e := startEnvWrapped(t, faults.wrap)
	// Before the extender stops, whose watches must read to end.
	t.Cleanup(func() { faults.lagAllocations(false) })
	ctx := context.Background()
	const group = "lostbind"
	e.addNode(ctx, t, "lostbind-1", group, 10, t4())
	half := ctr{name: "main", count: 1, memory: 10000}

	faults.lagAllocations(true)
	lost := faults.loseBindingAnswer("lost-first", 300*time.Millisecond)
	e.createPod(ctx, t, gpuPod("lost-first", group, nil, half))
	select {
	case <-lost:
	case <-time.After(time.Minute):
		t.Fatal("the extender did not bind pod lost-first")
	}
	framework.WaitFor(t, time.Minute, "the late binding of lost-first to be made", func() (bool, string) {
		p, err := e.cp.Kube.CoreV1().Pods(namespace).Get(ctx, "lost-first", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Spec.NodeName != "", "not bound"
	})
	e.createPod(ctx, t, gpuPod("lost-second", group, nil, half))
	e.waitFailedScheduling(ctx, t, "lost-second", "not enough memory")
	faults.lagAllocations(false)
	e.waitBound(ctx, t, "lost-first")
	e.cp.CheckGPUAccounting(ctx, t, "tessera-scheduler")

	e.deletePod(ctx, t, "lost-first")
	e.waitBound(ctx, t, "lost-second")
	e.checkOneInFlight(t)
}

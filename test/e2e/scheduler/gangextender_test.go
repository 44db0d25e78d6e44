package scheduler

import (
	"strings"
	"testing"

	"github.com/tessera-gpu/tessera/test/framework"
)

// TestGangsInExtenderMode pins that in extender mode, with the Workload API
// on, a PodGroup's GPU pods are turned away on every node with a reason
// that names tessera-scheduler: the extender never hears of the pod group
// cycle's Reserve and Unreserve, so it must not admit the gang and fail at
// bind.
func TestGangsInExtenderMode(t *testing.T) {
	e := startEnvOn(t, framework.Options{ControllerManager: true, Gangs: true}, nil)
	ctx := t.Context()
	e.addNode(ctx, t, "gang-extender", "gang-extender", 10, t4())
	g := e.createGang(ctx, t, "extender", "gang-extender", 2, 4000)
	// kube-scheduler words the pod its cycle tried first by its filters, and
	// the rest by the group.
	reasons := strings.Join(e.waitUnschedulable(ctx, t, g.pods), "\n")
	if !strings.Contains(reasons, "PodGroup extender") || !strings.Contains(reasons, "tessera-scheduler") {
		t.Errorf("the gang's pods wait with %q, want a reason naming the PodGroup and tessera-scheduler", reasons)
	}
	if b := e.bound(ctx, t, g.pods); len(b) > 0 {
		t.Errorf("pods %v of a gang were bound in extender mode", b)
	}
	if n := e.allocations(ctx, t, g.pods); n > 0 {
		t.Errorf("%d GPUAllocations written for a gang in extender mode", n)
	}
	e.checkNoOvercommit(ctx, t)
}

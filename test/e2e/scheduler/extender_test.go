package scheduler

import (
	"context"
	"strconv"
	"testing"
)

// scenario is one end-to-end case; each uses its own nodes, selected by a
// label.
type scenario struct {
	name string
	run  func(ctx context.Context, t *testing.T, e *env)
	// extenderOnly marks the cases about the extender itself: what its
	// preempt verb can and cannot do (plugin mode runs testPreemption
	// instead).
	extenderOnly bool
}

// scenarios are the cases both modes run, from one table.
func scenarios() []scenario {
	return []scenario{
		{name: "kubectl columns", run: testColumns},
		{name: "shapes", run: testShapes},
		{name: "node policy", run: testNodePolicy},
		{name: "a pod's preference beats the node policy", run: testPreferenceBeatsPolicy},
		{name: "GPU policy", run: testGPUPolicy},
		{name: "capacity", run: testCapacity},
		{name: "burst of 10 for one node", run: testBurst},
		{name: "orphaned allocation", run: testOrphan},
		{name: "pods the webhook did not see", run: testUnservable},
		{name: "restart during a burst of 200", run: testRestart},
		{name: "metrics", run: func(_ context.Context, t *testing.T, e *env) { testMetrics(t, e) }},
		{name: "preemption in extender mode", run: testExtenderPreemption, extenderOnly: true},
	}
}

// TestExtender runs the end-to-end scenarios one after another against one
// control plane, kube-scheduler calling the extender.
func TestExtender(t *testing.T) {
	e := startEnv(t)
	ctx := t.Context()
	for _, s := range scenarios() {
		t.Run(s.name, func(t *testing.T) { s.run(ctx, t, e) })
	}
	e.checkNoOvercommit(ctx, t)
	e.checkOneInFlight(t)
}

func itoa(i int) string { return strconv.Itoa(i) }

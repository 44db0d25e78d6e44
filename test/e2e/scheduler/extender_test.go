package scheduler

import (
	"strconv"
	"testing"
)

// TestExtender runs the end-to-end scenarios one after another against one
// control plane; each uses its own nodes, selected by a label.
func TestExtender(t *testing.T) {
	e := startEnv(t)
	ctx := t.Context()
	t.Run("kubectl columns", func(t *testing.T) { testColumns(ctx, t, e) })
	t.Run("shapes", func(t *testing.T) { testShapes(ctx, t, e) })
	t.Run("node policy", func(t *testing.T) { testNodePolicy(ctx, t, e) })
	t.Run("a pod's preference beats the node policy", func(t *testing.T) { testPreferenceBeatsPolicy(ctx, t, e) })
	t.Run("GPU policy", func(t *testing.T) { testGPUPolicy(ctx, t, e) })
	t.Run("capacity", func(t *testing.T) { testCapacity(ctx, t, e) })
	t.Run("burst of 10 for one node", func(t *testing.T) { testBurst(ctx, t, e) })
	t.Run("orphaned allocation", func(t *testing.T) { testOrphan(ctx, t, e) })
	t.Run("pods the webhook did not see", func(t *testing.T) { testUnservable(ctx, t, e) })
	t.Run("restart during a burst of 200", func(t *testing.T) { testRestart(ctx, t, e) })
	t.Run("metrics", func(t *testing.T) { testMetrics(t, e) })
	e.checkNoOvercommit(ctx, t)
	if v := e.plugin.Violations(); len(v) > 0 {
		t.Errorf("nodes had two pending allocations at once: %v", v)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

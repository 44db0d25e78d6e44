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
	t.Run("shapes", func(t *testing.T) { testShapes(ctx, t, e) })
	e.checkNoOvercommit(ctx, t)
	if v := e.plugin.Violations(); len(v) > 0 {
		t.Errorf("nodes had two pending allocations at once: %v", v)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

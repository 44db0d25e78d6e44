package scheduler

import (
	"context"
	"testing"
)

// checkNoOvercommit fails the test unless the GPU accounting invariants
// hold (framework.CheckGPUAccounting) for Tessera's pods.
func (e *env) checkNoOvercommit(ctx context.Context, t *testing.T) {
	t.Helper()
	e.cp.CheckGPUAccounting(ctx, t, schedulerName)
}

// checkOneInFlight fails the test if a node ever had two allocations
// pending at once: the device plugin could not tell which pod each is for.
func (e *env) checkOneInFlight(t *testing.T) {
	t.Helper()
	if v := e.plugin.Violations(); len(v) > 0 {
		t.Errorf("nodes had two pending allocations at once: %v", v)
	}
}

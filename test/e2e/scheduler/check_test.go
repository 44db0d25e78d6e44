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

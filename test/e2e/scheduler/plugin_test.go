package scheduler

import "testing"

// TestPlugin runs the end-to-end scenarios in plugin mode: tessera-scheduler
// (kube-scheduler with the Tessera plugin) instead of kube-scheduler and the
// extender, and the preemption scenarios only plugin mode can pass.
func TestPlugin(t *testing.T) {
	e := startPluginEnv(t)
	ctx := t.Context()
	// First, while nothing frees GPUs: freed GPUs rightly retry every pod
	// turned away, and tell it again why it waits.
	t.Run("one FailedScheduling event", func(t *testing.T) { testOneFailedSchedulingEvent(ctx, t, e) })
	for _, s := range scenarios() {
		if s.extenderOnly {
			continue
		}
		t.Run(s.name, func(t *testing.T) { s.run(ctx, t, e) })
	}
	t.Run("preemption", func(t *testing.T) { testPreemption(ctx, t, e) })
	e.checkNoOvercommit(ctx, t)
	e.checkOneInFlight(t)
}

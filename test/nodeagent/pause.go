package nodeagent

import (
	"context"
	"fmt"
)

// Pause holds back the admission of pods bound from now on, as a busy
// kubelet does; the pods wait, unlisted, until Resume.
func (a *Agent) Pause() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.paused == nil {
		a.paused = make(chan struct{})
	}
}

// Resume lets the pods Pause held back be admitted, one after another.
func (a *Agent) Resume() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.paused != nil {
		close(a.paused)
		a.paused = nil
	}
}

// waitResumed waits while the agent is paused.
func (a *Agent) waitResumed(ctx context.Context) error {
	a.mu.Lock()
	paused := a.paused
	a.mu.Unlock()
	if paused == nil {
		return nil
	}
	select {
	case <-paused:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("paused until the agent stopped: %w", context.Cause(ctx))
	}
}

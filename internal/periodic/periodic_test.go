package periodic

import (
	"context"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// TestEvery checks that the work runs once per period, not at the start,
// and stops with the context.
func TestEvery(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	ctx, cancel := context.WithCancel(context.Background())
	calls := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(ctx, clk, time.Minute, func() { calls <- struct{}{} })
	}()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	select {
	case <-calls:
		t.Fatal("the work ran before the first period passed")
	case <-time.After(50 * time.Millisecond):
	}
	for i := range 3 {
		clk.Step(time.Minute)
		select {
		case <-calls:
		case <-time.After(10 * time.Second):
			t.Fatalf("the work did not run after period %d", i+1)
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not return when the context ended")
	}
}

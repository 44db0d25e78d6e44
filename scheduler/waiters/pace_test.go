package waiters

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/util/flowcontrol"
	clocktesting "k8s.io/utils/clock/testing"
)

// turns is a rate limiter that counts the turns waited for and never
// makes one wait.
type turns struct {
	flowcontrol.RateLimiter
	waited int
}

func (l *turns) Wait(ctx context.Context) error {
	l.waited++
	return ctx.Err()
}

// TestPaceSlowsWhilePodsArePlaced checks that writes wait for the busy
// pace for placingFor after each sign that pods are placed (a pod
// released, a pending pod bound, a pod deleted), and for the idle pace
// always.
func TestPaceSlowsWhilePodsArePlaced(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	placing := NewPlacing(clk)
	idle, busy := &turns{}, &turns{}
	pace := &Pace{placing: placing, idle: idle, busy: busy}
	write := func(wantBusy int) {
		t.Helper()
		if err := pace.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		if busy.waited != wantBusy {
			t.Fatalf("turns waited at the busy pace: %d, want %d", busy.waited, wantBusy)
		}
	}
	later := func(d time.Duration) { clk.SetTime(clk.Now().Add(d)) }
	pending := gpuPod("p", 1000)
	bound := pending.DeepCopy()
	bound.Spec.NodeName = "node"
	handler := placing.Handler()

	write(0) // nothing placed yet
	placing.Held(pending, true)
	write(0) // a pod held is not placed
	placing.Held(pending, false)
	write(1)
	later(placingFor - time.Millisecond)
	write(2)
	later(time.Millisecond)
	write(2) // placingFor after the last placement

	handler.OnUpdate(pending, pending)
	write(2) // a pending pod changed, not bound
	handler.OnUpdate(pending, bound)
	write(3)
	later(placingFor)
	handler.OnUpdate(bound, bound)
	write(3) // a bound pod changed
	handler.OnDelete(bound)
	write(4)
	if idle.waited != 9 {
		t.Errorf("turns waited at the idle pace: %d, want every write's (9)", idle.waited)
	}

	placing.Now()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := pace.Wait(ctx); err == nil {
		t.Error("Wait returned no error after its context ended")
	}
	if busy.waited != 4 {
		t.Errorf("a write whose context ended waited for the busy pace too")
	}
}

// TestPaceWithoutPlacing checks that a pace without placing is never busy.
func TestPaceWithoutPlacing(t *testing.T) {
	idle, busy := &turns{}, &turns{}
	pace := &Pace{idle: idle, busy: busy}
	for range 3 {
		if err := pace.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if idle.waited != 3 || busy.waited != 0 {
		t.Errorf("turns waited: idle %d, busy %d; want 3 and 0", idle.waited, busy.waited)
	}
}

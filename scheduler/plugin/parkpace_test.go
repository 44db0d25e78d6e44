package plugin

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
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

func TestParkPaceSlowsWhilePodsArePlaced(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	idle, busy := &turns{}, &turns{}
	pace := &parkPace{clock: clk, idle: idle, busy: busy}
	park := func(wantBusy int) {
		t.Helper()
		if err := pace.wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		if busy.waited != wantBusy {
			t.Fatalf("turns waited at the busy pace: %d, want %d", busy.waited, wantBusy)
		}
	}

	park(0) // nothing placed yet
	pace.placing()
	park(1)
	clk.SetTime(clk.Now().Add(busyFor - time.Millisecond))
	park(2)
	clk.SetTime(clk.Now().Add(time.Millisecond))
	park(2) // busyFor after the last placement
	if idle.waited != 4 {
		t.Errorf("turns waited at the idle pace: %d, want every park's (4)", idle.waited)
	}

	pace.placing()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := pace.wait(ctx); err == nil {
		t.Error("wait returned no error after its context ended")
	}
	if busy.waited != 2 {
		t.Errorf("a park whose context ended waited for the busy pace too")
	}
}

// TestParkerSlowsWhilePodsArePlaced checks the parker's signals to its
// pace: a pod released and a pending pod gone (bound or deleted) each
// slow parking.
func TestParkerSlowsWhilePodsArePlaced(t *testing.T) {
	released, deleted := parkPod("released", nil), parkPod("deleted", nil)
	f := newParkFixture(t, released, deleted)
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	f.parker.pace.clock = clk
	busy := func() bool {
		return clk.Since(time.Unix(0, f.parker.pace.placed.Load())) < busyFor
	}
	close(f.leading)
	if busy() {
		t.Fatal("busy before any pod was placed")
	}

	f.hold(released, true)
	f.hold(released, false)
	if !busy() {
		t.Error("not busy after the gate released a pod")
	}

	clk.SetTime(clk.Now().Add(busyFor))
	if err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return f.parker.ready(), nil
	}); err != nil {
		t.Fatal("the parker's informer did not sync")
	}
	if busy() {
		t.Fatal("still busy busyFor after the release")
	}
	if err := f.kube.CoreV1().Pods("default").Delete(t.Context(), deleted.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return busy(), nil
	}); err != nil {
		t.Error("not busy after a pending pod left")
	}
}

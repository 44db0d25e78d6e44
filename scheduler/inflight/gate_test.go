package inflight

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

const ttl = time.Minute

// acquireAsync starts Acquire in a goroutine and returns its result channel.
func acquireAsync(ctx context.Context, g *Gate, node string, uid types.UID) <-chan error {
	return acquireStalling(ctx, g, node, uid, 0)
}

// acquireStalling is acquireAsync for a bind that gives up once no turn
// has begun on the node for stall.
func acquireStalling(ctx context.Context, g *Gate, node string, uid types.UID, stall time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() { done <- g.Acquire(ctx, node, uid, stall) }()
	return done
}

// stepWhenTimed steps the clock once every waiter has set its timers.
func stepWhenTimed(t *testing.T, clk *clocktesting.FakeClock, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("no timer set")
		}
		time.Sleep(time.Millisecond)
	}
	clk.Step(d)
}

// waitQueued waits until n binds wait on the node.
func waitQueued(t *testing.T, g *Gate, node string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for g.Waiting(node) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d waiting on %s, want %d", g.Waiting(node), node, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// queueBehindA has pod a take node n's turn, with its allocation attached
// when attach names one, and b wait behind it; it returns b's result.
func queueBehindA(t *testing.T, g *Gate, attach types.UID) <-chan error {
	t.Helper()
	expectDone(t, acquireAsync(t.Context(), g, "n", "a"), "a")
	if attach != "" {
		g.Attach("n", "a", attach)
	}
	b := acquireAsync(t.Context(), g, "n", "b")
	waitQueued(t, g, "n", 1)
	return b
}

func expectDone(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still waiting", what)
	}
}

// expectFailed waits for the Acquire on ch to fail with an error that
// says want.
func expectFailed(t *testing.T, ch <-chan error, what, want string) {
	t.Helper()
	select {
	case err := <-ch:
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: err = %v, want one that says %q", what, err, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still waiting, want it to fail with %q", what, want)
	}
}

func expectWaiting(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s went ahead (err %v), want it to wait", what, err)
	case <-time.After(20 * time.Millisecond):
	}
}

func TestGate(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, g *Gate, clk *clocktesting.FakeClock)
	}{
		{
			name: "free node admits at once",
			run: func(t *testing.T, g *Gate, _ *clocktesting.FakeClock) {
				expectDone(t, acquireAsync(t.Context(), g, "n", "a"), "a")
				if uid, ok := g.InFlight("n"); !ok || uid != "a" {
					t.Fatalf("in flight = %q, %v; want a", uid, ok)
				}
			},
		},
		{
			name: "second bind waits until the first is released",
			run: func(t *testing.T, g *Gate, _ *clocktesting.FakeClock) {
				b := queueBehindA(t, g, "")
				expectWaiting(t, b, "b")
				g.Release("n", "a")
				expectDone(t, b, "b")
			},
		},
		{
			name: "other nodes are not blocked",
			run: func(t *testing.T, g *Gate, _ *clocktesting.FakeClock) {
				expectDone(t, acquireAsync(t.Context(), g, "n", "a"), "a")
				expectDone(t, acquireAsync(t.Context(), g, "m", "b"), "b on another node")
			},
		},
		{
			name: "waiters go in arrival order",
			run: func(t *testing.T, g *Gate, _ *clocktesting.FakeClock) {
				b := queueBehindA(t, g, "")
				c := acquireAsync(t.Context(), g, "n", "c")
				waitQueued(t, g, "n", 2)
				g.Release("n", "a")
				expectDone(t, b, "b")
				expectWaiting(t, c, "c")
				g.Release("n", "b")
				expectDone(t, c, "c")
			},
		},
		{
			name: "release of a pod on another node changes nothing",
			run: func(t *testing.T, g *Gate, _ *clocktesting.FakeClock) {
				b := queueBehindA(t, g, "")
				g.Release("other", "a")
				g.Release("other", "b")
				expectWaiting(t, b, "b")
				g.Release("n", "a")
				expectDone(t, b, "b")
			},
		},
		{
			name: "a released waiter leaves the queue and never takes a turn",
			run: func(t *testing.T, g *Gate, _ *clocktesting.FakeClock) {
				b := queueBehindA(t, g, "")
				c := acquireAsync(t.Context(), g, "n", "c")
				waitQueued(t, g, "n", 2)
				g.Release("n", "b")
				expectFailed(t, b, "b", "released while it waited")
				if g.Queued("n", "b") || g.Waiting("n") != 1 {
					t.Fatalf("b queued: %v, %d waiting; want c alone", g.Queued("n", "b"), g.Waiting("n"))
				}
				g.Release("n", "a")
				expectDone(t, c, "c")
			},
		},
		{
			name: "in-flight allocation expires after the time-to-live",
			run: func(t *testing.T, g *Gate, clk *clocktesting.FakeClock) {
				b := queueBehindA(t, g, "")
				clk.Step(ttl - time.Second)
				expectWaiting(t, b, "b before the time-to-live")
				for !clk.HasWaiters() {
					time.Sleep(time.Millisecond)
				}
				clk.Step(time.Second)
				expectDone(t, b, "b after the time-to-live")
			},
		},
		{
			name: "waiters behind a moving queue wait past the stall limit",
			run: func(t *testing.T, g *Gate, clk *clocktesting.FakeClock) {
				expectDone(t, acquireAsync(t.Context(), g, "n", "a"), "a")
				b := acquireStalling(t.Context(), g, "n", "b", 10*time.Second)
				waitQueued(t, g, "n", 1)
				c := acquireStalling(t.Context(), g, "n", "c", 10*time.Second)
				waitQueued(t, g, "n", 2)
				stepWhenTimed(t, clk, 8*time.Second)
				g.Release("n", "a")
				expectDone(t, b, "b")
				// c has waited 16 s, 8 s since b's turn began.
				stepWhenTimed(t, clk, 8*time.Second)
				expectWaiting(t, c, "c")
				g.Release("n", "b")
				expectDone(t, c, "c")
			},
		},
		{
			name: "a waiter gives up when no turn begins for the stall limit",
			run: func(t *testing.T, g *Gate, clk *clocktesting.FakeClock) {
				expectDone(t, acquireAsync(t.Context(), g, "n", "a"), "a")
				b := acquireStalling(t.Context(), g, "n", "b", 10*time.Second)
				waitQueued(t, g, "n", 1)
				stepWhenTimed(t, clk, 9*time.Second)
				expectWaiting(t, b, "b before the stall limit")
				stepWhenTimed(t, clk, time.Second)
				expectFailed(t, b, "b", "no turn began there for 10s")
				if uid, ok := g.InFlight("n"); !ok || uid != "a" || g.Waiting("n") != 0 {
					t.Fatalf("in flight = %q, %v with %d waiting; want a alone", uid, ok, g.Waiting("n"))
				}
			},
		},
		{
			name: "queued names the pod in flight and those waiting",
			run: func(t *testing.T, g *Gate, _ *clocktesting.FakeClock) {
				b := queueBehindA(t, g, "")
				for uid, want := range map[types.UID]bool{"a": true, "b": true, "c": false} {
					if got := g.Queued("n", uid); got != want {
						t.Errorf("Queued(n, %s) = %v, want %v", uid, got, want)
					}
				}
				if g.Queued("m", "a") {
					t.Error("Queued(m, a) = true for a pod in flight on n")
				}
				g.Release("n", "a")
				expectDone(t, b, "b")
				if g.Queued("n", "a") {
					t.Error("Queued(n, a) = true after its turn ended")
				}
			},
		},
		{
			name: "cancelled waiter leaves the queue and the next one moves up",
			run: func(t *testing.T, g *Gate, _ *clocktesting.FakeClock) {
				expectDone(t, acquireAsync(t.Context(), g, "n", "a"), "a")
				ctx, cancel := context.WithCancel(t.Context())
				b := acquireAsync(ctx, g, "n", "b")
				waitQueued(t, g, "n", 1)
				c := acquireAsync(t.Context(), g, "n", "c")
				waitQueued(t, g, "n", 2)
				cancel()
				select {
				case err := <-b:
					if !errors.Is(err, context.Canceled) {
						t.Fatalf("b: err = %v, want context.Canceled", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("b did not give up")
				}
				waitQueued(t, g, "n", 1)
				g.Release("n", "a")
				expectDone(t, c, "c")
			},
		},
		{
			name: "observed allocation blocks like an acquired one",
			run: func(t *testing.T, g *Gate, clk *clocktesting.FakeClock) {
				g.Observe("n", "old", "alloc-old", clk.Now())
				b := acquireAsync(t.Context(), g, "n", "b")
				waitQueued(t, g, "n", 1)
				expectWaiting(t, b, "b")
				g.Release("n", "old")
				expectDone(t, b, "b")
			},
		},
		{
			name: "observed allocation older than the time-to-live does not block",
			run: func(t *testing.T, g *Gate, clk *clocktesting.FakeClock) {
				g.Observe("n", "old", "alloc-old", clk.Now().Add(-2*ttl))
				expectDone(t, acquireAsync(t.Context(), g, "n", "b"), "b")
			},
		},
		{
			name: "served allocation ends the turn",
			run: func(t *testing.T, g *Gate, _ *clocktesting.FakeClock) {
				b := queueBehindA(t, g, "alloc-a")
				g.ReleaseAllocation("n", "a", "alloc-a")
				expectDone(t, b, "b")
			},
		},
		{
			name: "an older allocation of the in-flight pod does not end its turn",
			run: func(t *testing.T, g *Gate, clk *clocktesting.FakeClock) {
				// After a restart: the pod's stale allocation is observed, then
				// its new bind takes the turn and writes a new allocation.
				g.Observe("n", "a", "alloc-stale", clk.Now())
				b := queueBehindA(t, g, "alloc-new")
				g.ReleaseAllocation("n", "a", "alloc-stale")
				expectWaiting(t, b, "b after the stale allocation went")
				g.ReleaseAllocation("n", "a", "alloc-new")
				expectDone(t, b, "b")
			},
		},
		{
			name: "the stale allocation's deletion between a new acquire and attach does not end the turn",
			run: func(t *testing.T, g *Gate, clk *clocktesting.FakeClock) {
				g.Observe("n", "a", "alloc-stale", clk.Now())
				b := queueBehindA(t, g, "")
				g.ReleaseAllocation("n", "a", "alloc-stale")
				expectWaiting(t, b, "b")
				g.Attach("n", "a", "alloc-new")
				g.ReleaseAllocation("n", "a", "alloc-new")
				expectDone(t, b, "b")
			},
		},
		{
			name: "an allocation event before the bind attached its allocation does not end the turn",
			run: func(t *testing.T, g *Gate, _ *clocktesting.FakeClock) {
				b := queueBehindA(t, g, "")
				g.ReleaseAllocation("n", "a", "alloc-stale")
				expectWaiting(t, b, "b")
				g.Release("n", "a")
				expectDone(t, b, "b")
			},
		},
		{
			name: "an allocation event before the bind attached its allocation is not taken as its own",
			run: func(t *testing.T, g *Gate, clk *clocktesting.FakeClock) {
				// The pod's old allocation, updated while its new bind writes.
				b := queueBehindA(t, g, "")
				g.Observe("n", "a", "alloc-old", clk.Now())
				g.ReleaseAllocation("n", "a", "alloc-old")
				expectWaiting(t, b, "b")
			},
		},
		{
			name: "a create whose answer was lost keeps the turn until the allocation it made ends",
			run: func(t *testing.T, g *Gate, clk *clocktesting.FakeClock) {
				b := queueBehindA(t, g, "")
				g.Lost("n", "a", types.NamespacedName{Namespace: "ns", Name: "p"})
				expectWaiting(t, b, "b after a's bind failed")
				// The tracker sees the allocation the create made.
				g.Observe("n", "a", "alloc-a", clk.Now())
				g.ReleaseAllocation("n", "a", "alloc-other")
				expectWaiting(t, b, "b after another allocation of a ended")
				g.ReleaseAllocation("n", "a", "alloc-a")
				expectDone(t, b, "b")
			},
		},
		{
			name: "a pod binding again after a lost create takes its turn back",
			run: func(t *testing.T, g *Gate, clk *clocktesting.FakeClock) {
				b := queueBehindA(t, g, "")
				g.Lost("n", "a", types.NamespacedName{Namespace: "ns", Name: "p"})
				expectDone(t, acquireAsync(t.Context(), g, "n", "a"), "a again")
				// Its lost allocation, seen late, is not the new bind's.
				g.Observe("n", "a", "alloc-lost", clk.Now())
				g.ReleaseAllocation("n", "a", "alloc-lost")
				expectWaiting(t, b, "b")
				g.Attach("n", "a", "alloc-new")
				g.ReleaseAllocation("n", "a", "alloc-new")
				expectDone(t, b, "b")
			},
		},
		{
			name: "acquire by the pod already in flight returns at once",
			run: func(t *testing.T, g *Gate, _ *clocktesting.FakeClock) {
				expectDone(t, acquireAsync(t.Context(), g, "n", "a"), "a")
				expectDone(t, acquireAsync(t.Context(), g, "n", "a"), "a again")
			},
		},
		{
			name: "idle node is forgotten",
			run: func(t *testing.T, g *Gate, _ *clocktesting.FakeClock) {
				expectDone(t, acquireAsync(t.Context(), g, "n", "a"), "a")
				g.Release("n", "a")
				g.mu.Lock()
				defer g.mu.Unlock()
				if len(g.nodes) != 0 {
					t.Fatalf("gate keeps %d idle nodes", len(g.nodes))
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
			tc.run(t, NewGate(clk, ttl, 0, nil), clk)
		})
	}
}

// A node whose device plugin learns from the kubelet which pod it serves
// takes no turns: binds there go ahead at once, those already waiting go
// ahead when the node says so, and a node back to turns begins with none
// in flight.
func TestGateUnqueuedNode(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	g := NewGate(clk, ttl, 0, nil)

	b := queueBehindA(t, g, "alloc-a")
	c := acquireAsync(t.Context(), g, "n", "c")
	waitQueued(t, g, "n", 2)
	g.SetUnqueued("n", true)
	expectDone(t, b, "b, waiting when the node stopped taking turns")
	expectDone(t, c, "c, waiting when the node stopped taking turns")
	if uid, ok := g.InFlight("n"); ok {
		t.Fatalf("%s is in flight on a node that takes no turns", uid)
	}

	expectDone(t, acquireAsync(t.Context(), g, "n", "d"), "d")
	expectDone(t, acquireAsync(t.Context(), g, "n", "e"), "e")
	g.Observe("n", "f", "alloc-f", clk.Now())
	if uid, ok := g.InFlight("n"); ok {
		t.Fatalf("%s is in flight on a node that takes no turns", uid)
	}

	g.SetUnqueued("n", false)
	expectDone(t, acquireAsync(t.Context(), g, "n", "g"), "g, the first bind once turns resume")
	h := acquireAsync(t.Context(), g, "n", "h")
	waitQueued(t, g, "n", 1)
	g.Release("n", "g")
	expectDone(t, h, "h, after g's turn")
}

package inflight

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

const verifyAfter = 2 * time.Second

// scriptedVerifier answers with what the test set and records each turn
// it was asked about.
type scriptedVerifier struct {
	mu       sync.Mutex
	inFlight bool
	err      error
	asked    []Turn
	// unbounded counts the calls whose context had no deadline.
	unbounded int
}

func (v *scriptedVerifier) verify(ctx context.Context, t Turn) (bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.asked = append(v.asked, t)
	if _, ok := ctx.Deadline(); !ok {
		v.unbounded++
	}
	return v.inFlight, v.err
}

func (v *scriptedVerifier) answer(inFlight bool, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.inFlight, v.err = inFlight, err
}

func (v *scriptedVerifier) calls() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.asked)
}

// waitAsked waits until the verifier has been asked n times.
func (v *scriptedVerifier) waitAsked(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for v.calls() < n {
		if time.Now().After(deadline) {
			t.Fatalf("verifier asked %d times, want %d", v.calls(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestGateVerifiesLongTurns(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, g *Gate, v *scriptedVerifier, clk *clocktesting.FakeClock)
	}{
		{
			name: "a turn the API says is over goes to the next bind",
			run: func(t *testing.T, g *Gate, v *scriptedVerifier, clk *clocktesting.FakeClock) {
				v.answer(false, nil)
				b := queueBehindA(t, g, "alloc-a")
				clk.Step(verifyAfter - time.Millisecond)
				expectWaiting(t, b, "b before the turn was verified")
				if v.calls() != 0 {
					t.Fatalf("verified a turn of %s", verifyAfter-time.Millisecond)
				}
				clk.Step(time.Millisecond)
				expectDone(t, b, "b")
				want := Turn{Node: "n", PodUID: "a", Allocation: "alloc-a", Since: time.Unix(1_000_000, 0)}
				if v.asked[0] != want {
					t.Errorf("verifier asked about %+v, want %+v", v.asked[0], want)
				}
				if uid, ok := g.InFlight("n"); !ok || uid != "b" {
					t.Errorf("in flight = %q, %v; want b", uid, ok)
				}
				if v.unbounded != 0 {
					t.Errorf("the verifier was asked without a deadline: a waiter stuck in it would not hear of a release")
				}
			},
		},
		{
			name: "a turn still in flight is asked about again",
			run: func(t *testing.T, g *Gate, v *scriptedVerifier, clk *clocktesting.FakeClock) {
				v.answer(true, nil)
				b := queueBehindA(t, g, "alloc-a")
				clk.Step(verifyAfter)
				v.waitAsked(t, 1)
				expectWaiting(t, b, "b while a is in flight")
				v.answer(false, nil)
				clk.Step(verifyAfter)
				v.waitAsked(t, 2)
				expectDone(t, b, "b")
			},
		},
		{
			name: "an error leaves the turn",
			run: func(t *testing.T, g *Gate, v *scriptedVerifier, clk *clocktesting.FakeClock) {
				v.answer(false, errors.New("the API server is away"))
				b := queueBehindA(t, g, "alloc-a")
				clk.Step(verifyAfter)
				v.waitAsked(t, 1)
				expectWaiting(t, b, "b")
				g.Release("n", "a")
				expectDone(t, b, "b")
			},
		},
		{
			name: "a turn whose allocation is not written yet is not asked about",
			run: func(t *testing.T, g *Gate, v *scriptedVerifier, clk *clocktesting.FakeClock) {
				v.answer(false, nil)
				b := queueBehindA(t, g, "")
				clk.Step(verifyAfter)
				expectWaiting(t, b, "b")
				if v.calls() != 0 {
					t.Fatalf("verifier asked about a turn whose bind is still writing its allocation")
				}
				g.Attach("n", "a", "alloc-a")
				clk.Step(verifyAfter)
				expectDone(t, b, "b")
			},
		},
		{
			name: "a turn whose bind lost the answer to its create is asked about by the pod's name",
			run: func(t *testing.T, g *Gate, v *scriptedVerifier, clk *clocktesting.FakeClock) {
				v.answer(false, nil)
				b := queueBehindA(t, g, "")
				pod := types.NamespacedName{Namespace: "ns", Name: "p"}
				g.Lost("n", "a", pod)
				clk.Step(verifyAfter)
				expectDone(t, b, "b")
				want := Turn{Node: "n", PodUID: "a", Lost: pod, Since: time.Unix(1_000_000, 0)}
				if v.asked[0] != want {
					t.Errorf("verifier asked about %+v, want %+v", v.asked[0], want)
				}
			},
		},
		{
			name: "only the first waiter asks",
			run: func(t *testing.T, g *Gate, v *scriptedVerifier, clk *clocktesting.FakeClock) {
				v.answer(true, nil)
				queueBehindA(t, g, "alloc-a")
				acquireAsync(t.Context(), g, "n", "c")
				waitQueued(t, g, "n", 2)
				clk.Step(verifyAfter)
				v.waitAsked(t, 1)
				time.Sleep(20 * time.Millisecond)
				if n := v.calls(); n != 1 {
					t.Errorf("verifier asked %d times for one turn", n)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
			v := &scriptedVerifier{}
			tc.run(t, NewGate(clk, ttl, verifyAfter, v.verify), v, clk)
		})
	}
}

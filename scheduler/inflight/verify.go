package inflight

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// verifyTimeout bounds one verification.
const verifyTimeout = 5 * time.Second

// Turn is a node's in-flight allocation as the gate knows it.
type Turn struct {
	// Node is the node whose turn it is.
	Node string
	// PodUID is the pod in flight.
	PodUID types.UID
	// Allocation is the pod's GPUAllocation; empty when its bind lost the
	// answer to the allocation's create, and no allocation has been seen.
	Allocation types.UID
	// Lost names the pod, and so its allocation, when its bind lost the
	// answer to the allocation's create (Gate.Lost); empty otherwise.
	Lost types.NamespacedName
	// Since is when the turn began.
	Since time.Time
}

// Verifier reports whether a turn is still in flight, reading the API
// rather than waiting for events: false once the allocation was served,
// failed or is gone, or its pod is gone or finished. It answers true when
// it cannot tell; an error leaves the turn as it is.
type Verifier func(ctx context.Context, t Turn) (bool, error)

// nextVerify is when the turn is next verified.
func (g *Gate) nextVerify(h *holder) time.Time {
	last := h.since
	if h.verified.After(last) {
		last = h.verified
	}
	return last.Add(g.verifyAfter)
}

// verifyTurn asks the verifier about the node's turn and ends it if the
// turn is over and has not changed meanwhile. A turn whose bind has yet to
// write its allocation is in flight without asking; one whose bind lost
// the answer to that write is asked about.
func (g *Gate) verifyTurn(ctx context.Context, node string) {
	g.mu.Lock()
	h := g.queue(node).holder
	if h == nil {
		g.mu.Unlock()
		return
	}
	turn := Turn{Node: node, PodUID: h.uid, Allocation: h.allocation, Lost: h.lost, Since: h.since}
	g.mu.Unlock()

	inFlight, err := true, error(nil)
	if turn.Allocation != "" || turn.Lost != (types.NamespacedName{}) {
		// The waiter does not hear of a release while it asks.
		ctx, cancel := context.WithTimeout(ctx, verifyTimeout)
		inFlight, err = g.verify(ctx, turn)
		cancel()
	}

	g.mu.Lock()
	defer g.mu.Unlock()
	q := g.queue(node)
	if q.holder != h || h.allocation != turn.Allocation || h.lost != turn.Lost {
		return
	}
	if err == nil && !inFlight {
		q.holder = nil
		return
	}
	h.verified = g.clock.Now()
}

package inflight

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Gate admits one in-flight allocation per node, in the order binds arrive.
// An allocation stops being in flight when Release is called for it, when
// it has been in flight for longer than the time-to-live, or when the
// gate's verifier says that it is over.
type Gate struct {
	clock       clock.Clock
	ttl         time.Duration
	verifyAfter time.Duration
	verify      Verifier

	mu    sync.Mutex
	nodes map[string]*nodeQueue
	// unqueued holds the nodes whose device plugin learns from the kubelet
	// which pod it allocates for: any number of their allocations may be
	// in flight, so their binds take no turn.
	unqueued map[string]bool
}

// nodeQueue is one node's in-flight allocation and the binds waiting behind it.
type nodeQueue struct {
	holder  *holder
	waiters []*waiter
	// moved is when the node's latest turn began.
	moved time.Time
}

// holder is the node's in-flight pod and, once known, its allocation.
type holder struct {
	uid        types.UID
	allocation types.UID
	since      time.Time
	// verified is when the verifier last said the turn is in flight.
	verified time.Time
	// lost names the pod when its bind lost the answer to the create of
	// its allocation (see Lost); empty otherwise.
	lost types.NamespacedName
}

type waiter struct {
	uid  types.UID
	wake chan struct{}
	// released is set when Release drops the waiter: its pod is gone.
	released bool
}

// DefaultVerifyAfter is how long a node's in-flight turn lasts before the
// first bind waiting for it asks the API whether it is over (and again as
// often after that). A turn normally lasts well under a second; asking
// costs two reads per node whose binds wait.
const DefaultVerifyAfter = 2 * time.Second

// NewGate returns a gate whose in-flight allocations expire after ttl. With
// a verifier, the first bind waiting for a node asks it, once the turn has
// lasted verifyAfter and every verifyAfter after that, whether the turn is
// still in flight, and takes the turn if it is not: an event that was
// missed or comes late (a watch reconnecting slowly after the API server
// restarted) then holds the node up for seconds, not for the time-to-live.
func NewGate(clk clock.Clock, ttl, verifyAfter time.Duration, verify Verifier) *Gate {
	return &Gate{clock: clk, ttl: ttl, verifyAfter: verifyAfter, verify: verify, nodes: map[string]*nodeQueue{}, unqueued: map[string]bool{}}
}

// SetUnqueued says whether the node's binds take turns: not when its device
// plugin learns from the kubelet which pod each allocation is for
// (GPUNode status.podIdentification PodResources). A node that stops
// taking turns lets every waiting bind go ahead at once; one that starts
// again begins with no allocation in flight.
func (g *Gate) SetUnqueued(node string, unqueued bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.unqueued[node] == unqueued {
		return
	}
	if !unqueued {
		delete(g.unqueued, node)
		return
	}
	g.unqueued[node] = true
	q, ok := g.nodes[node]
	if !ok {
		return
	}
	q.holder = nil
	for _, w := range q.waiters {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	g.forgetIfIdle(node, q)
}

// Acquire waits until the pod with the given UID may put an allocation in
// flight on the node, and makes it the node's in-flight allocation. It
// waits as long as the node's turns move: it gives up when no turn has
// begun there for stall (never, when stall is zero), since a bind a long
// queue holds up will have its turn, and one behind a node whose turns
// stopped will not. It returns an error, leaving the queue as it was,
// when it gives up, ctx ends first, or Release drops the waiting pod.
func (g *Gate) Acquire(ctx context.Context, node string, uid types.UID, stall time.Duration) error {
	w := &waiter{uid: uid, wake: make(chan struct{}, 1)}
	g.mu.Lock()
	if g.unqueued[node] {
		g.mu.Unlock()
		return nil
	}
	q := g.queue(node)
	if q.holder != nil && q.holder.uid == uid {
		// The pod binds again, so whatever allocation it had in flight is
		// being replaced: events about that one no longer end its turn.
		q.holder.allocation = ""
		q.holder.lost = types.NamespacedName{}
		q.holder.since = g.clock.Now()
		q.moved = q.holder.since
		g.mu.Unlock()
		return nil
	}
	q.waiters = append(q.waiters, w)
	waitingSince := g.clock.Now()
	for {
		if g.unqueued[node] {
			g.leave(node, w)
			g.mu.Unlock()
			return nil
		}
		var expiry, verify, stalled <-chan time.Time
		var timers []clock.Timer
		if q.waiters[0] == w {
			if q.holder == nil || g.expired(q.holder) {
				q.holder = &holder{uid: uid, since: g.clock.Now()}
				q.moved = q.holder.since
				q.waiters = q.waiters[1:]
				g.wakeHead(q)
				g.mu.Unlock()
				return nil
			}
			expiryTimer := g.clock.NewTimer(q.holder.since.Add(g.ttl).Sub(g.clock.Now()))
			expiry = expiryTimer.C()
			timers = append(timers, expiryTimer)
			if g.verify != nil {
				verifyTimer := g.clock.NewTimer(g.nextVerify(q.holder).Sub(g.clock.Now()))
				verify = verifyTimer.C()
				timers = append(timers, verifyTimer)
			}
		}
		if stall > 0 {
			left := latest(waitingSince, q.moved).Add(stall).Sub(g.clock.Now())
			if left <= 0 {
				g.leave(node, w)
				g.mu.Unlock()
				return fmt.Errorf("waiting for the in-flight allocation on node %s: no turn began there for %s", node, stall)
			}
			stallTimer := g.clock.NewTimer(left)
			stalled = stallTimer.C()
			timers = append(timers, stallTimer)
		}
		g.mu.Unlock()

		verifyNow := false
		select {
		case <-w.wake:
		case <-expiry:
		case <-verify:
			verifyNow = true
		case <-stalled:
		case <-ctx.Done():
		}
		for _, t := range timers {
			t.Stop()
		}
		if ctx.Err() != nil {
			g.mu.Lock()
			g.leave(node, w)
			g.mu.Unlock()
			return fmt.Errorf("waiting for the in-flight allocation on node %s: %w", node, context.Cause(ctx))
		}
		if verifyNow {
			g.verifyTurn(ctx, node)
		}
		g.mu.Lock()
		if w.released {
			g.mu.Unlock()
			return fmt.Errorf("waiting for the in-flight allocation on node %s: the pod was released while it waited", node)
		}
		q = g.queue(node)
	}
}

// Attach records which GPUAllocation the node's in-flight pod got, so that
// events about an older allocation of the same pod do not end its turn.
func (g *Gate) Attach(node string, uid, allocation types.UID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if q, ok := g.nodes[node]; ok && q.holder != nil && q.holder.uid == uid {
		q.holder.allocation = allocation
	}
}

// Lost records that the bind of the pod in flight on the node sent the
// create of its GPUAllocation, named pod, and lost the answer: the request
// was cancelled or timed out, or the connection dropped, so the allocation
// may exist, pending on the node, though the bind failed. The turn stays
// until the allocation is known not to be there or to be over: Observe
// gives the turn the allocation when the tracker sees it, so that its
// events end the turn as any allocation's do, and the verifier is asked
// by the pod's name, not only once an allocation is attached. The pod
// binding again takes the turn back as usual.
func (g *Gate) Lost(node string, uid types.UID, pod types.NamespacedName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if q, ok := g.nodes[node]; ok && q.holder != nil && q.holder.uid == uid {
		q.holder.lost = pod
	}
}

// Release ends the pod's turn on the node, whatever its allocation, so the
// next bind may go ahead: the bind failed, or the pod is gone. A pod
// still waiting for its turn there leaves the queue, and its Acquire
// returns an error: a pod deleted while its bind waits does not take a
// turn. Releasing a pod that is neither does nothing.
func (g *Gate) Release(node string, uid types.UID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	q, ok := g.nodes[node]
	if !ok {
		return
	}
	if q.holder != nil && q.holder.uid == uid {
		g.free(node, q)
		return
	}
	for _, w := range q.waiters {
		if w.uid == uid {
			w.released = true
			g.leave(node, w)
			select {
			case w.wake <- struct{}{}:
			default:
			}
			return
		}
	}
}

// ReleaseAllocation ends the pod's turn on the node if its in-flight
// allocation is the given one: it was served, failed or was deleted.
func (g *Gate) ReleaseAllocation(node string, uid, allocation types.UID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	q, ok := g.nodes[node]
	if !ok || q.holder == nil || q.holder.uid != uid || q.holder.allocation != allocation {
		return
	}
	g.free(node, q)
}

// Observe records an allocation found in flight on the node, such as a
// pending one listed after a restart, since the given time. It changes
// nothing when the node already has an allocation in flight, except that
// a turn whose bind lost the answer to its create (Lost) takes its pod's
// allocation.
func (g *Gate) Observe(node string, uid, allocation types.UID, since time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.unqueued[node] {
		return
	}
	q := g.queue(node)
	switch h := q.holder; {
	case h == nil:
		q.holder = &holder{uid: uid, allocation: allocation, since: since}
		q.moved = latest(q.moved, since)
	case h.uid == uid && h.lost != (types.NamespacedName{}) && h.allocation == "":
		h.allocation = allocation
	}
}

func (g *Gate) free(node string, q *nodeQueue) {
	q.holder = nil
	g.wakeHead(q)
	g.forgetIfIdle(node, q)
}

// InFlight returns the UID of the node's in-flight allocation, if any has
// not yet expired.
func (g *Gate) InFlight(node string) (types.UID, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	q, ok := g.nodes[node]
	if !ok || q.holder == nil || g.expired(q.holder) {
		return "", false
	}
	return q.holder.uid, true
}

// Queued reports whether the pod is in flight on the node, or waits there
// for its turn.
func (g *Gate) Queued(node string, uid types.UID) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	q, ok := g.nodes[node]
	if !ok {
		return false
	}
	if q.holder != nil && q.holder.uid == uid {
		return true
	}
	for _, w := range q.waiters {
		if w.uid == uid {
			return true
		}
	}
	return false
}

// Waiting returns how many binds wait for the node.
func (g *Gate) Waiting(node string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if q, ok := g.nodes[node]; ok {
		return len(q.waiters)
	}
	return 0
}

func (g *Gate) queue(node string) *nodeQueue {
	q, ok := g.nodes[node]
	if !ok {
		q = &nodeQueue{}
		g.nodes[node] = q
	}
	return q
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (g *Gate) expired(h *holder) bool {
	return !g.clock.Now().Before(h.since.Add(g.ttl))
}

// wakeHead tells the first waiter to look again; its channel holds one
// wake-up, so a waiter that is not yet listening does not miss it.
func (g *Gate) wakeHead(q *nodeQueue) {
	if len(q.waiters) == 0 {
		return
	}
	select {
	case q.waiters[0].wake <- struct{}{}:
	default:
	}
}

// leave removes a waiter that gave up and wakes the new head of the queue.
func (g *Gate) leave(node string, w *waiter) {
	q, ok := g.nodes[node]
	if !ok {
		return
	}
	for i, other := range q.waiters {
		if other == w {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			if i == 0 {
				g.wakeHead(q)
			}
			break
		}
	}
	g.forgetIfIdle(node, q)
}

func (g *Gate) forgetIfIdle(node string, q *nodeQueue) {
	if q.holder == nil && len(q.waiters) == 0 {
		delete(g.nodes, node)
	}
}

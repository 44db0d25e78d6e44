package waiters

import (
	"cmp"
	"slices"

	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// shape is the waiting pods that ask for the same GPUs.
type shape struct {
	key string
	req *placement.Request
	// minMemoryMiB is the least memory a container asks of one GPU; 0
	// when one asks for a share of the GPU's memory, which depends on the GPU.
	minMemoryMiB int64
	// pods are in queue order, one entry per pod, with those gone or
	// moved to another shape until they are compacted (see has).
	pods []*waiter
	live int
}

// has reports whether the waiter of an entry of the shape's pods is
// still of the shape: a waiter that left it, gone or for another shape,
// keeps its entry until the list is compacted.
func (s *shape) has(w *waiter) bool { return !w.gone && w.shape == s }

// join adds the waiter to the shape of key, in queue order.
func (r *Queue) join(w *waiter, key string, req *placement.Request) {
	s, ok := r.byKey[key]
	if !ok {
		s = &shape{key: key, req: req, minMemoryMiB: minMemoryMiB(req)}
		r.byKey[key] = s
		i, _ := slices.BinarySearchFunc(r.shapes, s.minMemoryMiB, func(e *shape, m int64) int { return cmp.Compare(e.minMemoryMiB, m) })
		r.shapes = slices.Insert(r.shapes, i, s)
	}
	w.shape = s
	s.live++
	// Pods mostly come in queue order, and join at the tail; those that
	// come in no order (a scheduler judging every waiting pod at its
	// start) are found their place by bisection, not by a walk from the
	// tail, which took minutes over 180,000 pods.
	if n := len(s.pods); n == 0 || before(s.pods[n-1], w) {
		s.pods = append(s.pods, w)
		return
	}
	i, found := slices.BinarySearchFunc(s.pods, w, func(e, target *waiter) int {
		return QueueOrder(e.pod, e.priority, target.pod, target.priority)
	})
	if found {
		// The pod's entry from before it left the shape, not yet
		// compacted: it takes that place, or it would be played twice.
		s.pods[i] = w
		return
	}
	s.pods = slices.Insert(s.pods, i, w)
}

// remove forgets the waiter.
func (r *Queue) remove(w *waiter) {
	delete(r.pods, w.pod.UID)
	// Its nodes stay set, for the caller to play again.
	if w.heldOn != "" || w.trying != "" {
		r.promised--
	}
	if w.claimed != "" {
		r.claims.drop(w.pod.UID, w.claimed)
		w.claimed = ""
	}
	r.setHeld(w, false)
	r.setQuotaAsked(w, nil)
	r.leave(w)
}

// leave takes the waiter out of its shape in O(1): it is marked gone, and
// the shape's list compacted once it is half gone.
func (r *Queue) leave(w *waiter) {
	s := w.shape
	w.gone = true
	s.live--
	if s.live == 0 {
		delete(r.byKey, s.key)
		r.shapes = slices.DeleteFunc(r.shapes, func(e *shape) bool { return e == s })
		return
	}
	if len(s.pods) > 2*s.live {
		s.pods = slices.DeleteFunc(s.pods, func(e *waiter) bool { return !s.has(e) })
	}
}

// minMemoryMiB is the least memory a container of req asks of one GPU.
func minMemoryMiB(req *placement.Request) int64 {
	least := int64(-1)
	for _, c := range req.Containers {
		m := c.MemoryMiB
		if c.WholeMemory() || c.MemoryPercent > 0 {
			m = 0
		}
		if least < 0 || m < least {
			least = m
		}
	}
	return max(least, 0)
}

package fitgate

import (
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

const (
	// RebuildAfter is how long a shape's nodes are trusted before they are
	// found again from the view: a free signal lost delays a pod that
	// long at most.
	RebuildAfter = 30 * time.Second
	// ForgetAfter is how long a shape no one asks about is kept.
	ForgetAfter = time.Minute
	// MaxShapes is how many shapes are kept before those not asked about
	// within ForgetAfter are forgotten.
	MaxShapes = 4096
)

// Index answers whether any live node could hold a request by its GPUs
// now. It is safe for concurrent use.
type Index struct {
	view  *view.View
	rules view.Rules
	clock clock.PassiveClock

	mu     sync.Mutex
	shapes map[string]*shape
	ft     placement.Fitter
	one    [1]string
}

// shape is what the index knows of one request shape.
type shape struct {
	req *placement.Request
	// nodes could hold the request when they were added; in is the same
	// set, to add each once.
	nodes []string
	in    map[string]struct{}
	// possible is set when some node could hold the request were its
	// GPUs all free.
	possible bool
	builtAt  time.Time
	askedAt  time.Time
	// why is the reason the shape waits, as of whyAt (see Why).
	why   string
	whyAt time.Time
}

// New returns an index over the view, by its rules.
func New(v *view.View, rules view.Rules, clk clock.PassiveClock) *Index {
	return &Index{view: v, rules: rules, clock: clk, shapes: map[string]*shape{}}
}

// Fits reports whether some live node could hold req by its GPUs now, and
// whether some node could were its GPUs all free (possible); key is
// ShapeKey(req).
func (x *Index) Fits(key string, req *placement.Request) (fits, possible bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	s := x.shape(key, req, x.clock.Now())
	x.eachFit(s, func(string) bool {
		fits = true
		return false
	})
	return fits, s.possible
}

// EachFit calls fn with each live node that could hold req by its GPUs
// now, most recently freed first, until fn returns false; key is
// ShapeKey(req). fn runs under the index's lock: it may read the view,
// but not call the index.
func (x *Index) EachFit(key string, req *placement.Request, fn func(node string) bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.eachFit(x.shape(key, req, x.clock.Now()), fn)
}

// eachFit calls fn with each node of the shape that could hold it now,
// from the last added, until fn returns false, and drops those that no
// longer could. It runs under x.mu.
func (x *Index) eachFit(s *shape, fn func(node string) bool) {
	now := x.clock.Now()
	for i := len(s.nodes) - 1; i >= 0; i-- {
		node := s.nodes[i]
		if !x.holds(node, s.req, now) {
			// Filled up, gone or closed: a free puts it back. The last
			// node, seen already, takes its place.
			last := len(s.nodes) - 1
			s.nodes[i] = s.nodes[last]
			s.nodes = s.nodes[:last]
			delete(s.in, node)
			continue
		}
		if !fn(node) {
			return
		}
	}
}

// Freed adds the node to the shapes it could hold now: GPUs may have
// become free on it, or it may take more pods (the view's free signal).
func (x *Index) Freed(node string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.shapes) == 0 {
		return
	}
	now := x.clock.Now()
	x.one[0] = node
	x.view.Read(x.one[:], "", func(_ string, n *view.Node) {
		for _, s := range x.shapes {
			if _, ok := s.in[node]; ok {
				continue
			}
			fits, possible := x.fits(n, s.req, now)
			s.possible = s.possible || possible
			if fits {
				s.add(node)
			}
		}
	})
}

// shape returns the shape of key, found from every node of the view when
// it is new or older than RebuildAfter. It runs under x.mu.
func (x *Index) shape(key string, req *placement.Request, now time.Time) *shape {
	s, ok := x.shapes[key]
	if ok && now.Sub(s.builtAt) <= RebuildAfter {
		s.askedAt = now
		return s
	}
	if !ok {
		x.forgetUnasked(now)
		s = &shape{req: req}
		x.shapes[key] = s
	}
	s.nodes, s.in, s.possible = s.nodes[:0], map[string]struct{}{}, false
	s.builtAt, s.askedAt = now, now
	x.view.Each(func(n *view.Node) {
		fits, possible := x.fits(n, req, now)
		s.possible = s.possible || possible
		if fits {
			s.add(n.Placement.Name)
		}
	}, nil)
	return s
}

// forgetUnasked forgets, past MaxShapes, the shapes not asked about within
// ForgetAfter. It runs under x.mu.
func (x *Index) forgetUnasked(now time.Time) {
	if len(x.shapes) < MaxShapes {
		return
	}
	for key, s := range x.shapes {
		if now.Sub(s.askedAt) > ForgetAfter {
			delete(x.shapes, key)
		}
	}
}

// holds reports whether the named node could hold req now. It runs under
// x.mu.
func (x *Index) holds(node string, req *placement.Request, now time.Time) bool {
	var fits bool
	x.one[0] = node
	x.view.Read(x.one[:], "", func(_ string, n *view.Node) {
		if closed, _ := x.rules.Closed(n, now, req); closed.OK() {
			fits = x.ft.Feasible(&n.Placement, req, nil)
		}
	})
	return fits
}

// fits reports whether n could hold req now, and whether it could with
// all its GPUs free, by the rules every placement follows. It runs under
// x.mu and the view's read lock.
func (x *Index) fits(n *view.Node, req *placement.Request, now time.Time) (fits, possible bool) {
	if closed, _ := x.rules.Closed(n, now, req); !closed.OK() {
		return false, false
	}
	var f placement.Failure
	if x.ft.Feasible(&n.Placement, req, &f) {
		return true, true
	}
	return false, !f.Unresolvable
}

// add adds a node the shape could go on.
func (s *shape) add(node string) {
	s.in[node] = struct{}{}
	s.nodes = append(s.nodes, node)
}

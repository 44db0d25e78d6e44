package view

import (
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
)

// Pod returns what the pod holds. The result must not be changed.
func (v *View) Pod(uid types.UID) (*Pod, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	p, ok := v.pods[uid]
	return p, ok
}

// Read calls fn for each named node under the read lock, with nil for a
// node the view does not know. The pod with UID without, if it holds GPUs
// on a node, is left out of the usage fn sees there: a pod being scheduled
// again holds only what an interrupted bind left behind. So is one of its
// gang's holds on the node, if it is a gang's pod (see JoinGang). fn must
// not keep the node or change it.
func (v *View) Read(names []string, without types.UID, fn func(name string, n *Node)) {
	v.ReadWith(nil, names, without, fn)
}

// ReadWith is Read, remembering in l which node each name is, for the next
// call with l: finding a node in the view costs more than comparing its
// name with the one at its place in the list before. kube-scheduler lists
// its nodes in the same order call after call when its filter runs on one
// CPU; on more, its parallel filter interleaves them differently every
// call, and l then finds few in their place, at the cost of a comparison
// each. l may be nil.
//
// The first time a Lookup finds its nodes after they changed, the view
// lays them out in memory in the order of names (see arrange).
func (v *View) ReadWith(l *Lookup, names []string, without types.UID, fn func(name string, n *Node)) {
	v.ReadParallel(l, names, without, 1, func(_, i int, n *Node) { fn(names[i], n) })
}

// MinNodesPerWorker is the fewest names ReadParallel gives a worker of
// its own: below that, starting one costs more than it saves.
const MinNodesPerWorker = 512

// ReadParallel is ReadWith with the names cut into up to workers runs, one
// after another, each read by a goroutine of its own: fn is called for
// name i with the number of the worker reading it, from 0, and calls for
// different workers run at once. A worker gets at least MinNodesPerWorker
// names.
func (v *View) ReadParallel(l *Lookup, names []string, without types.UID, workers int, fn func(worker, i int, n *Node)) {
	if v.read(l, names, without, workers, fn) {
		v.arrange(names)
	}
}

// read is ReadParallel under the read lock. It returns whether the nodes
// are to be arranged in the order of names: l had to find them, and they
// have not been arranged since they last changed.
func (v *View) read(l *Lookup, names []string, without types.UID, workers int, fn func(worker, i int, n *Node)) (unarranged bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	stale, hasStale := v.pods[without]
	g := v.members[without]
	l.prepare(v.generation, len(names))
	var found atomic.Bool
	readRun := func(worker, from, to int) {
		missed := false
		for i := from; i < to; i++ {
			name := names[i]
			n, ok := l.get(i, name)
			if !ok {
				n = v.nodes[name]
				l.set(i, name, n)
				missed = true
			}
			if n != nil && hasStale && stale.Node == name {
				n = n.without(stale)
			}
			if held := g.on(name); n != nil && held != nil {
				n = n.without(held)
			}
			fn(worker, i, n)
		}
		if missed {
			found.Store(true)
		}
	}
	workers = max(1, min(workers, len(names)/MinNodesPerWorker))
	run := (len(names) + workers - 1) / workers
	var wg sync.WaitGroup
	// A panic in fn on another goroutine goes on in this one, once every
	// worker is done, as if fn had run here: an HTTP server recovers from
	// a panicking request, not from a goroutine the request started.
	var panicked atomic.Pointer[any]
	for w := 1; w < workers; w++ {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					panicked.CompareAndSwap(nil, &r)
				}
			}()
			readRun(w, w*run, min((w+1)*run, len(names)))
		})
	}
	readRun(0, 0, min(run, len(names)))
	wg.Wait()
	if r := panicked.Load(); r != nil {
		panic(*r)
	}
	return l != nil && found.Load() && v.arranged != v.generation
}

// Lookup is the nodes a list of names was found to be, while the view
// holds the same nodes. Its zero value is ready for use; it is not safe
// for concurrent use, but the workers of one ReadParallel each use their
// own places in it.
type Lookup struct {
	names []string
	nodes []*Node
	// generation is the view's when the nodes were found.
	generation uint64
}

// prepare readies l for a list of count names in the view's generation:
// the names remembered stay only while the view holds the same nodes. A nil
// l does nothing.
func (l *Lookup) prepare(generation uint64, count int) {
	if l == nil {
		return
	}
	if l.generation != generation {
		// Forget every name, even those past the length, which a longer
		// list would otherwise find again.
		clear(l.names[:cap(l.names)])
		clear(l.nodes[:cap(l.nodes)])
		l.generation = generation
	}
	l.names, l.nodes = lengthen(l.names, count), lengthen(l.nodes, count)
}

// lengthen returns s with length n, keeping what it holds up to its
// capacity, and zeros past that.
func lengthen[T any](s []T, n int) []T {
	if cap(s) < n {
		s = append(s[:cap(s)], make([]T, n-cap(s))...)
	}
	return s[:n]
}

// get returns the node the i-th name was found to be, if the name is the
// same as then. A nil l knows none.
func (l *Lookup) get(i int, name string) (*Node, bool) {
	if l == nil || l.names[i] != name || name == "" {
		return nil, false
	}
	return l.nodes[i], true
}

// set records that the i-th name is node n; a nil l records nothing. It
// keeps a copy of the name that the caller may not change (the node's own,
// or a clone): callers pass names that live only as long as their call.
func (l *Lookup) set(i int, name string, n *Node) {
	if l == nil {
		return
	}
	if n != nil && n.Placement.Name == name {
		name = n.Placement.Name
	} else {
		name = strings.Clone(name)
	}
	l.names[i], l.nodes[i] = name, n
}

// Each calls nodeFn for every node with a GPUNode and podFn for every pod
// holding GPUs, under the read lock. They must not keep or change what they get.
func (v *View) Each(nodeFn func(n *Node), podFn func(p *Pod)) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if nodeFn != nil {
		for _, n := range v.nodes {
			if n.HasGPUNode {
				nodeFn(n)
			}
		}
	}
	if podFn != nil {
		for _, p := range v.pods {
			podFn(p)
		}
	}
}

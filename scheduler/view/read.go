package view

import (
	"strings"

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
// again holds only what an interrupted bind left behind. fn must not keep
// the node or change it.
func (v *View) Read(names []string, without types.UID, fn func(name string, n *Node)) {
	v.ReadWith(nil, names, without, fn)
}

// ReadWith is Read, remembering in l which node each name is, for the next
// call with l: kube-scheduler asks about the same thousands of nodes in
// call after call, and finding each in the view costs more than comparing
// its name with the one at its place in the list before. l may be nil.
//
// The first time a Lookup finds its nodes after they changed, the view
// lays them out in memory in the order of names (see arrange).
func (v *View) ReadWith(l *Lookup, names []string, without types.UID, fn func(name string, n *Node)) {
	if v.read(l, names, without, fn) {
		v.arrange(names)
	}
}

// read is ReadWith under the read lock. It returns whether the nodes are to
// be arranged in the order of names: l had to find them, and they have not
// been arranged since they last changed.
func (v *View) read(l *Lookup, names []string, without types.UID, fn func(name string, n *Node)) (unarranged bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	stale, hasStale := v.pods[without]
	if l != nil && l.generation != v.generation {
		l.names, l.nodes, l.generation = l.names[:0], l.nodes[:0], v.generation
	}
	found := false
	for i, name := range names {
		var n *Node
		if l != nil && i < len(l.names) && l.names[i] == name {
			n = l.nodes[i]
		} else {
			n = v.nodes[name]
			l.set(i, name, n)
			found = true
		}
		if n != nil && hasStale && stale.Node == name {
			n = n.without(stale)
		}
		fn(name, n)
	}
	if l != nil && len(l.names) > len(names) {
		l.names, l.nodes = l.names[:len(names)], l.nodes[:len(names)]
	}
	return l != nil && found && v.arranged != v.generation
}

// Lookup is the nodes a list of names was found to be, while the view
// holds the same nodes. Its zero value is ready for use; it is not safe
// for concurrent use.
type Lookup struct {
	names []string
	nodes []*Node
	// generation is the view's when the nodes were found.
	generation uint64
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
	switch {
	case i < len(l.names):
		l.names[i], l.nodes[i] = name, n
	default:
		l.names, l.nodes = append(l.names, name), append(l.nodes, n)
	}
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

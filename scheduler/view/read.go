package view

import "k8s.io/apimachinery/pkg/types"

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
	v.mu.RLock()
	defer v.mu.RUnlock()
	stale, hasStale := v.pods[without]
	for _, name := range names {
		n := v.nodes[name]
		if n != nil && hasStale && stale.Node == name {
			n = n.without(stale)
		}
		fn(name, n)
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

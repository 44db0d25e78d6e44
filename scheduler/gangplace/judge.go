package gangplace

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// Member is one pod of a gang and the node a placement puts it on.
type Member struct {
	Node string
	// Request is the pod's GPU request; nil or without containers for a
	// pod that asks for no GPUs.
	Request *placement.Request
}

// Effect is what placing a gang's pods does to the nodes they go to.
type Effect struct {
	// Pods is how many of the gang's pods are placed.
	Pods int
	// Nodes is how many nodes they go to.
	Nodes int
	// Fragments is how many more GPUs those nodes have partly held with
	// the pods than without: negative where the pods fill fragments.
	Fragments int
}

// Score orders effects, higher better: more pods placed first, then fewer
// nodes, then fewer new fragments.
func (e Effect) Score() int64 {
	return int64(e.Pods)<<40 - int64(e.Nodes)<<20 - int64(e.Fragments)
}

// Judge returns what placing the members on their nodes does, as the view
// sees the nodes now: each node's members placed on it one beside another
// by placement's rules.
func Judge(v *view.View, members []Member) Effect {
	byNode := map[string][]*placement.Request{}
	for _, m := range members {
		reqs := byNode[m.Node]
		if m.Request != nil && len(m.Request.Containers) > 0 {
			reqs = append(reqs, m.Request)
		}
		byNode[m.Node] = reqs
	}
	nodes := make([]string, 0, len(byNode))
	for name := range byNode {
		nodes = append(nodes, name)
	}
	slices.Sort(nodes)
	e := Effect{Pods: len(members), Nodes: len(nodes)}
	var ft placement.Fitter
	none := func(types.UID) bool { return false }
	v.Read(nodes, "", func(name string, n *view.Node) {
		if n == nil || len(byNode[name]) == 0 {
			return
		}
		c := n.Without(none)
		before := c.Fragments()
		ft.Pack(c, byNode[name], 0)
		e.Fragments += c.Fragments() - before
	})
	return e
}

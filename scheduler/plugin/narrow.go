package plugin

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tessera-gpu/tessera/scheduler/fitgate"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// narrow returns, for PreFilter, the nodes whose GPUs could hold req now,
// from the fit gate's index, so that kube-scheduler filters those alone
// instead of every node: under a backlog a pod the gate lets by fits a
// few nodes of thousands, and kube-scheduler, finding fewer feasible
// nodes than it looks for, would filter them all. The other nodes fail
// Tessera's Filter all the same, so the answer is the same.
//
// It returns nil, so that every node is filtered, unless the gate holds
// pods (a burst on a cluster with room pays nothing), when the pod could
// preempt (preemption's dry run passes by the nodes left out, whose GPUs
// evicting a pod could free), for a nominated pod, a gang's or one that
// holds GPUs already (its own count as free for it), when no
// node could hold the pod (Filter then says why, node by node), and when
// more nodes could hold it than kube-scheduler looks for (see
// feasibleSought): its filtering stops early then.
func (p *Plugin) narrow(pod *v1.Pod, req *placement.Request, nodes int) *fwk.PreFilterResult {
	if !p.waiters.holdsAny() || p.passes(pod) || p.couldPreempt(pod) {
		return nil
	}
	if _, holding := p.view.Pod(pod.UID); holding {
		// Filter counts the GPUs it holds as free for it; the index does not.
		return nil
	}
	limit := feasibleSought(nodes)
	names := sets.New[string]()
	p.index.EachFit(fitgate.ShapeKey(req), req, func(node string) bool {
		names.Insert(node)
		return len(names) <= limit
	})
	if len(names) == 0 || len(names) > limit {
		return nil
	}
	return &fwk.PreFilterResult{NodeNames: names}
}

// feasibleSought is how many feasible nodes kube-scheduler looks for
// among n before it stops filtering, with its default
// percentageOfNodesToScore: all of them under 100 nodes, else a share
// that falls from 50% by one point per 125 nodes to 5%, and at least 100.
func feasibleSought(n int) int {
	const least, floor = 100, 5
	if n < least {
		return n
	}
	found := n * max(floor, 50-n/125) / 100
	return max(found, least)
}

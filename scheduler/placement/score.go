package placement

import (
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/tessera-gpu/tessera/gpurequest"
)

// Score rates a node for a request that fits it, from 0 to
// extenderv1.MaxExtenderPriority, by the node policy: the node's allocated
// share of memory and of cores, averaged, after placing the request as Fit
// would. Binpack scores a busier node higher, Spread an emptier one; any
// other policy counts as Binpack, the documented default. A node that does
// not fit scores 0.
func Score(node *Node, req *Request, policy gpurequest.Policy) int64 {
	var e engine
	if !e.place(node, req, true) {
		return 0
	}
	used := e.utilisation()
	if policy == gpurequest.Spread {
		used = 1 - used
	}
	return int64(used*float64(extenderv1.MaxExtenderPriority) + 0.5)
}

package nodescore

import (
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// loadScale turns a node's load, from 0 to 1, into Score's integer.
const loadScale = 1_000_000

// FromLoad is Score's value for a node the pod would leave at load (0 to
// 1), or, when fits is false, for a node the pod does not fit: then the
// value is negative, and Normalize scores the node 0.
func FromLoad(load float64, fits bool) int64 {
	if !fits {
		return -1
	}
	return int64(load * loadScale)
}

// Normalize ranks the nodes' loads, as FromLoad wrote them, by the node
// policy with placement.Rank, on kube-scheduler's scale of 0 to
// MaxNodeScore.
func Normalize(scores fwk.NodeScoreList, policy gpurequest.Policy) {
	loads := make([]float64, len(scores))
	fits := make([]bool, len(scores))
	ranks := make([]int64, len(scores))
	for i := range scores {
		loads[i], fits[i] = float64(scores[i].Score)/loadScale, scores[i].Score >= 0
	}
	placement.Rank(ranks, loads, fits, policy)
	for i := range scores {
		scores[i].Score = ranks[i] * fwk.MaxNodeScore / extenderv1.MaxExtenderPriority
	}
}

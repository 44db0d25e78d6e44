package placement

import (
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/tessera-gpu/tessera/gpurequest"
)

// Load is the node's allocated share of memory and of cores, averaged,
// after placing the request as Fit would: 0 for an empty node, 1 for a
// full one. ok is false when the request does not fit.
func (ft *Fitter) Load(node *Node, req *Request) (load float64, ok bool) {
	if !ft.e.place(node, req, true) {
		return 0, false
	}
	return ft.e.utilisation(), true
}

// Rank writes into scores, one for each of loads, the nodes' scores from 1
// to extenderv1.MaxExtenderPriority by their loads, relative to one
// another: Binpack gives the busiest node the top score and the emptiest
// 1, Spread the reverse, and loads between scale linearly; any other
// policy counts as Binpack, the documented default.
// Relative scores keep the policy decisive in a nearly empty cluster, where
// absolute shares would all round to the same score and leave the choice to
// kube-scheduler's own spreading. Equal loads score equally, and a node
// whose entry in fits is false scores 0, below every node that fits.
func Rank(scores []int64, loads []float64, fits []bool, policy gpurequest.Policy) {
	lo, hi, any := 0.0, 0.0, false
	for i, l := range loads {
		if !fits[i] {
			continue
		}
		if !any || l < lo {
			lo = l
		}
		if !any || l > hi {
			hi = l
		}
		any = true
	}
	for i, l := range loads {
		if !fits[i] {
			scores[i] = 0
			continue
		}
		rel := 1.0
		if hi > lo {
			rel = (l - lo) / (hi - lo)
			if policy == gpurequest.Spread {
				rel = 1 - rel
			}
		}
		scores[i] = 1 + int64(rel*float64(extenderv1.MaxExtenderPriority-1)+0.5)
	}
}

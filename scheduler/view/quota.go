package view

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/quota"
)

// Quota is a pod's namespace's GPU quota as one scheduling decision reads
// it, once for every node it decides: the limits, what the namespace's
// other pods hold, and the least the pod takes on any GPUs. A node turned
// away by the quota is unresolvable: Tessera evicts no pod to make room in
// a quota, not even one of the same namespace.
type Quota struct {
	// Namespace is the pod's.
	Namespace string
	// Limits are the namespace's.
	Limits quota.Limits
	// Used is what the namespace's pods but this one hold.
	Used placement.Use
	// Least is what the pod takes wherever it goes (placement.LeastUse).
	Least placement.Use
	// Unstated says why no node takes the pod, whatever room the quota
	// has: it limits compute, and containers of the pod state none (see
	// quota.Limits.Unstated). Only a new pod, or the limit gone, changes
	// that.
	Unstated Reason
}

// Quota reads the quota of the pod's namespace, leaving out what the pod
// itself holds (see View.UsedWithout). It must not be called from Read's
// fn.
func (r Rules) Quota(v *View, namespace string, pod types.UID, req *placement.Request) Quota {
	q := Quota{Namespace: namespace, Limits: r.Limits(namespace)}
	if q.Limits.Enforced() {
		q.Used = v.UsedWithout(namespace, pod)
		q.Least = placement.LeastUse(req)
		q.Unstated = Reason(q.Limits.Unstated(namespace, req.Containers, string(r.CoresResource)))
	}
	return q
}

// Closed says why no node takes the pod: the least it asks is already
// more than the quota leaves.
func (q *Quota) Closed() Reason {
	return Reason(q.Limits.Exceeded(q.Namespace, q.Used, q.Least))
}

// Exceeded says why the GPUs that req gets on node n, as placement picks
// them there, do not fit the quota, with what they take; it is OK when
// they fit, or when req does not fit n at all or the namespace has no
// quota (asked is then zero). A percentage of memory or a whole GPU takes
// more on a large GPU than on a small one, so the answer is the node's.
// ft is scratch memory the caller lends.
func (q *Quota) Exceeded(ft *placement.Fitter, n *placement.Node, req *placement.Request) (asked placement.Use, why Reason) {
	if !q.Limits.Enforced() {
		return placement.Use{}, ""
	}
	asked, ok := ft.Use(n, req)
	if !ok {
		return placement.Use{}, ""
	}
	return asked, q.ExceededBy(asked)
}

// ExceededBy says why a pod asking for asked does not fit the quota, or
// is OK when it does.
func (q *Quota) ExceededBy(asked placement.Use) Reason {
	return Reason(q.Limits.Exceeded(q.Namespace, q.Used, asked))
}

// TurnedAway gathers what a namespace's GPU quota turned away over the
// nodes of one decision: whether it turned any away, and the least,
// resource by resource, that the pod asked of the quota on them, which is
// what the quota must have room for before the pod is worth retrying.
// Its zero value has turned none away.
type TurnedAway struct {
	Any   bool
	Asked placement.Use
}

// Add records a node turned away where the pod asked for asked.
func (t *TurnedAway) Add(asked placement.Use) {
	if !t.Any {
		t.Any, t.Asked = true, asked
		return
	}
	t.Asked = t.Asked.Min(asked)
}

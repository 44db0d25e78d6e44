package extender

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/preemption"
	"github.com/tessera-gpu/tessera/scheduler/view"
	"github.com/tessera-gpu/tessera/scheduler/waiters"
)

// judge decides nodes for one pod by the rules' admission order (see
// view.Rules), as filter and serves do: what every node shares is read
// once, before the nodes.
type judge struct {
	now   time.Time
	rules view.Rules
	req   *placement.Request
	quota view.Quota
	// quotaClosed says why the quota has no room for the pod on any node.
	quotaClosed view.Reason
	// turnedAway gathers what the quota turned away on every node.
	turnedAway view.TurnedAway
	// claimed returns the room on a node that the fit gate released
	// other pods for; nil without the fit gate.
	claimed func(node string) []placement.Hold
}

// judge reads what deciding the pod's nodes needs now. It must not be
// called from the view's Read.
func (e *Extender) judge(pod *corev1.Pod, req *placement.Request) *judge {
	rules := e.rules()
	j := &judge{now: e.Clock.Now(), rules: rules, req: req, quota: rules.Quota(e.View, pod.Namespace, pod.UID, req)}
	j.quotaClosed = j.quota.Closed()
	if e.FitGate != nil {
		priority := preemption.Priority(pod)
		j.claimed = func(node string) []placement.Hold { return e.FitGate.Claimed(node, pod.UID, priority) }
	}
	return j
}

// decide files node name, n in the view, under part: feasible; failed,
// when evicting pods might make room or the fit gate released other pods
// for the room; or unresolvable, when the node takes no GPU pods, could
// not fit the request even empty, or the namespace's quota has no room
// for it there.
func (j *judge) decide(part *filterPart, name string, n *view.Node) {
	if closed, _ := j.rules.Closed(n, j.now, j.req); !closed.OK() {
		part.unresolvable = append(part.unresolvable, nodeReason{name, string(closed)})
		return
	}
	if !j.quota.Unstated.OK() {
		// Not turned away for room: no room the quota gets lets it in.
		part.unresolvable = append(part.unresolvable, nodeReason{name, string(j.quota.Unstated)})
		return
	}
	if !j.quotaClosed.OK() {
		part.unresolvable = append(part.unresolvable, nodeReason{name, string(j.quotaClosed)})
		part.turnedAway.Add(j.quota.Least)
		return
	}
	f := &part.failure
	node := &n.Placement
	var claimed []placement.Hold
	if j.claimed != nil {
		claimed = j.claimed(name)
	}
	if len(claimed) > 0 {
		node = node.With(claimed)
	}
	switch {
	case part.fitter.Feasible(node, j.req, f):
		if asked, over := j.quota.Exceeded(&part.fitter, node, j.req); !over.OK() {
			part.unresolvable = append(part.unresolvable, nodeReason{name, string(over)})
			part.turnedAway.Add(asked)
			return
		}
		part.feasible = append(part.feasible, name)
	case f.Unresolvable:
		part.unresolvable = append(part.unresolvable, nodeReason{name, part.reason(f)})
	case len(claimed) > 0 && part.fitter.Feasible(&n.Placement, j.req, nil):
		part.failed = append(part.failed, nodeReason{name, waiters.Claimed})
	default:
		part.failed = append(part.failed, nodeReason{name, part.reason(f)})
	}
}

// serves reports whether node n, as the view holds it, could take the
// pod now: decide would find it feasible. ft is scratch memory.
func (j *judge) serves(ft *placement.Fitter, n *view.Node) bool {
	if closed, _ := j.rules.Closed(n, j.now, j.req); !closed.OK() || !j.quota.Unstated.OK() || !j.quotaClosed.OK() {
		return false
	}
	if !ft.Feasible(&n.Placement, j.req, nil) {
		return false
	}
	_, over := j.quota.Exceeded(ft, &n.Placement, j.req)
	return over.OK()
}

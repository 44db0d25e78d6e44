package waiters

import (
	v1 "k8s.io/api/core/v1"

	"github.com/tessera-gpu/tessera/scheduler/fitgate"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/preemption"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// HeldPrefix begins the reason of every pod the fit gate holds.
const HeldPrefix = "held by Tessera until GPUs free up: "

// Promised is why the fit gate holds a pod whose GPUs the pods ahead of
// it in the queue take.
const Promised = "the GPUs that could hold it now go to pods ahead of it in the queue"

// Claimed is why a node that has room for a pod does not take it: the
// room is promised to other pods of the same or higher priority,
// released for it (Queue.Claimed).
const Claimed = "its free GPUs are promised to other pods, on their way to take them"

// NotSynced is the reason of the pods held until the view syncs.
const NotSynced = "held by Tessera until its view of GPUs and allocations has synced with the API"

// Gate is what a fit gate holds pods with, in every mode: the profile
// whose pods it holds, whether any node could hold a request, the waiting
// pods that frees release, the priorities a pod could preempt, the
// reasons told to held pods, and the pods that wait for the view to sync.
type Gate struct {
	Profile    string
	Index      *fitgate.Index
	Waiters    *Queue
	Priorities *fitgate.Priorities
	Reasons    Teller
	Unsynced   *Unsynced
}

// Teller tells held pods why they wait (Reasons).
type Teller interface {
	Tell(pod *v1.Pod, why string)
}

// NewGate returns the gate of profile over the queue's index, its
// priorities told to the queue (NewPriorities), its reasons and the pods
// that wait for the view to sync.
func NewGate(profile string, q *Queue, priorities *fitgate.Priorities, reasons Teller, unsynced *Unsynced) Gate {
	return Gate{Profile: profile, Index: q.Index(), Waiters: q, Priorities: priorities, Reasons: reasons, Unsynced: unsynced}
}

// Passes reports whether the pod passes the gate whatever its GPUs: of
// another profile, bound, nominated by preemption, or of a gang.
func (g *Gate) Passes(pod *v1.Pod) bool {
	return pod.Spec.SchedulerName != g.Profile || pod.Spec.NodeName != "" ||
		pod.Status.NominatedNodeName != "" || pod.Spec.SchedulingGroup != nil
}

// Judge lets the pod by when GPUs some live node has now are its own in
// queue order, when no node could hold req even with its GPUs all free,
// or when its namespace's GPU quota (rules over v) turns it away; it
// holds the pod otherwise, and says why.
func (g *Gate) Judge(pod *v1.Pod, req *placement.Request, rules view.Rules, v *view.View) (held bool, why string) {
	key := fitgate.ShapeKey(req)
	// Remembered before the index is asked, so that a free in between
	// plays the pod.
	ticket := g.Waiters.Asked(pod, req)
	fits, possible := g.Index.Fits(key, req)
	if !possible || fits && g.Waiters.turn(pod.UID, func(fn func(string) bool) { g.Index.EachFit(key, req, fn) }) ||
		quotaRefuses(rules, v, pod, req) {
		return false, ""
	}
	reason := Promised
	if !fits {
		reason = g.Index.Why(key, req)
	}
	return g.hold(pod, reason, ticket)
}

// hold holds the pod for reason, as judged from ticket on, telling it why
// when that changed, and returns why; it lets the pod by when a free
// chose it meanwhile.
func (g *Gate) hold(pod *v1.Pod, reason string, ticket uint64) (held bool, why string) {
	why = HeldPrefix + reason
	held, tell := g.Waiters.Held(pod.UID, why, ticket)
	if !held {
		return false, ""
	}
	if tell {
		g.Reasons.Tell(pod, why)
	}
	return true, why
}

// CouldPreempt reports whether the pod may preempt and some bound pod has
// a lower priority: kube-scheduler's preemption may make room for it.
func (g *Gate) CouldPreempt(pod *v1.Pod) bool {
	if !mayPreempt(pod) {
		return false
	}
	lowest, ok := g.Priorities.Lowest()
	return ok && lowest < preemption.Priority(pod)
}

// quotaRefuses reports whether the GPU quota of the pod's namespace turns
// req away whatever GPUs free: the pod waits on the quota, which
// kube-scheduler's cycle tells it, not on GPUs.
func quotaRefuses(rules view.Rules, v *view.View, pod *v1.Pod, req *placement.Request) bool {
	quota := rules.Quota(v, pod.Namespace, pod.UID, req)
	return !quota.Unstated.OK() || !quota.Closed().OK()
}

// mayPreempt reports whether the pod's preemption policy lets it preempt.
func mayPreempt(pod *v1.Pod) bool {
	return pod.Spec.PreemptionPolicy == nil || *pod.Spec.PreemptionPolicy != v1.PreemptNever
}

// NewPriorities returns the priorities of bound pods, which release the
// queue's held pods that could preempt a pod bound below every other.
func NewPriorities(q *Queue) *fitgate.Priorities {
	p := fitgate.NewPriorities()
	p.OnLowered(q.preemptible)
	return p
}

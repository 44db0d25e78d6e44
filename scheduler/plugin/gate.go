package plugin

import (
	"context"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/fitgate"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/preemption"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// FitGateName is the fit gate's name in a KubeSchedulerConfiguration.
const FitGateName = "TesseraFitGate"

// heldPrefix begins the reason of every pod the fit gate holds.
const heldPrefix = "held by Tessera until GPUs free up: "

// promised is why the fit gate holds a pod whose GPUs the pods ahead of
// it in the queue take.
const promised = "the GPUs that could hold it now go to pods ahead of it in the queue"

// notSynced is the reason of the pods held until the view syncs.
const notSynced = "held by Tessera until its view of GPUs and allocations has synced with the API"

var (
	_ fwk.PreEnqueuePlugin  = (*FitGate)(nil)
	_ fwk.EnqueueExtensions = (*FitGate)(nil)
)

// FitGate keeps GPU pods that no live node could hold by their GPUs now
// out of kube-scheduler's active queue, so that kube-scheduler does not
// filter every node for each of them in turn while a freed GPU waits
// behind them. The Tessera plugin's requeuer releases them as GPUs free,
// in kube-scheduler's queue order and only as many as the room holds, and
// holds a pod that fits behind the held pods ahead of it (requeuer.turn). It
// is a plugin of its own, beside Tessera in the same profile, so that it
// registers no cluster events: kube-scheduler asks a gate about each pod
// it holds on every event the gate registers, and Tessera's own events
// (an assigned pod deleted) come many times a second under a backlog.
type FitGate struct {
	tessera *atomic.Pointer[Plugin]
}

// Name returns the gate's name.
func (g *FitGate) Name() string { return FitGateName }

// EventsToRegister registers no events: the requeuer activates held pods.
func (g *FitGate) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return nil, nil
}

// PreEnqueue holds the pod when Tessera's view says no live node could
// hold its GPUs now (see Plugin.gate). Without the Tessera plugin in the
// profile it holds nothing.
func (g *FitGate) PreEnqueue(_ context.Context, pod *v1.Pod) *fwk.Status {
	p := g.tessera.Load()
	if p == nil {
		return nil
	}
	return p.gate(pod)
}

// gate holds a GPU pod of the profile that no live node could hold by
// its GPUs now, but one could once GPUs free, or whose GPUs the held pods
// ahead of it take, and tells it why. It never
// holds a pod whose wait is not for GPUs to free: one without GPUs, with
// an invalid request, already holding GPUs, nominated by preemption,
// of a gang, one that could preempt a lower-priority pod, or one its
// namespace's GPU quota turns away; nor one no node could hold even with
// its GPUs all free, which kube-scheduler tells why. Pods that come
// before the view has synced wait for the sync and are judged then.
func (p *Plugin) gate(pod *v1.Pod) *fwk.Status {
	if p.passes(pod) || pod.Annotations[gpuv1alpha1.GangHoldAnnotation] != "" {
		return nil
	}
	req, err := p.parser.Parse(pod)
	if err != nil || len(req.Containers) == 0 {
		return nil
	}
	if p.unsynced.wait(pod) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, notSynced)
	}
	if _, holding := p.view.Pod(pod.UID); holding || p.couldPreempt(pod) {
		return nil
	}
	return p.judge(pod, req.Request, p.rules, p.view)
}

// quotaRefuses reports whether the GPU quota of the pod's namespace turns
// req away whatever GPUs free: the pod waits on the quota, which
// kube-scheduler's cycle tells it, not on GPUs.
func quotaRefuses(rules view.Rules, v *view.View, pod *v1.Pod, req *placement.Request) bool {
	quota := rules.Quota(v, pod.Namespace, pod.UID, req)
	return !quota.Unstated.OK() || !quota.Closed().OK()
}

// fitGate is what a fit gate holds pods with, in plugin and in DRA mode:
// the profile whose pods it holds, whether any node could hold a request,
// the waiting pods that frees release, the priorities a pod could
// preempt, the reasons told to held pods, and the pods that wait for the
// view to sync.
type fitGate struct {
	profile    string
	index      *fitgate.Index
	waiters    *requeuer
	priorities *fitgate.Priorities
	reasons    *heldReasons
	unsynced   *unsynced
}

// passes reports whether the pod passes the gate whatever its GPUs: of
// another profile, bound, nominated by preemption, or of a gang.
func (g *fitGate) passes(pod *v1.Pod) bool {
	return pod.Spec.SchedulerName != g.profile || pod.Spec.NodeName != "" ||
		pod.Status.NominatedNodeName != "" || pod.Spec.SchedulingGroup != nil
}

// judge lets the pod by when GPUs some live node has now are its own in
// queue order, when no node could hold req even with its GPUs all free,
// or when its namespace's GPU quota (rules over v) turns it away; it
// holds the pod otherwise.
func (g *fitGate) judge(pod *v1.Pod, req *placement.Request, rules view.Rules, v *view.View) *fwk.Status {
	key := fitgate.ShapeKey(req)
	// Remembered before the index is asked, so that a free in between
	// plays the pod.
	g.waiters.asked(pod, req)
	fits, possible := g.index.Fits(key, req)
	if !possible || fits && g.waiters.turn(pod.UID, func(fn func(string) bool) { g.index.EachFit(key, req, fn) }) ||
		quotaRefuses(rules, v, pod, req) {
		return nil
	}
	if fits {
		return g.hold(pod, promised)
	}
	return g.hold(pod, g.index.Why(key, req))
}

// hold holds the pod for reason, telling it why when that changed.
func (g *fitGate) hold(pod *v1.Pod, reason string) *fwk.Status {
	why := heldPrefix + reason
	if g.waiters.held(pod.UID, why) {
		g.reasons.tell(pod, why)
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, why)
}

// couldPreempt reports whether the pod may preempt and some bound pod has
// a lower priority: kube-scheduler's preemption may make room for it.
func (g *fitGate) couldPreempt(pod *v1.Pod) bool {
	if !mayPreempt(pod) {
		return false
	}
	lowest, ok := g.priorities.Lowest()
	return ok && lowest < preemption.Priority(pod)
}

// mayPreempt reports whether the pod's preemption policy lets it preempt.
func mayPreempt(pod *v1.Pod) bool {
	return pod.Spec.PreemptionPolicy == nil || *pod.Spec.PreemptionPolicy != v1.PreemptNever
}

// newPriorities returns the priorities of bound pods, which release the
// held pods that could preempt a pod bound below every other.
func newPriorities(rq *requeuer) *fitgate.Priorities {
	p := fitgate.NewPriorities()
	p.OnLowered(rq.preemptible)
	return p
}

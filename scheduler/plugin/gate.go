package plugin

import (
	"context"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
	"github.com/tessera-gpu/tessera/scheduler/waiters"
)

// FitGateName is the fit gate's name in a KubeSchedulerConfiguration.
const FitGateName = "TesseraFitGate"

var (
	_ fwk.PreEnqueuePlugin  = (*FitGate)(nil)
	_ fwk.EnqueueExtensions = (*FitGate)(nil)
)

// FitGate keeps GPU pods that no live node could hold by their GPUs now
// out of kube-scheduler's active queue, so that kube-scheduler does not
// filter every node for each of them in turn while a freed GPU waits
// behind them. The Tessera plugin's requeuer releases them as GPUs free,
// in kube-scheduler's queue order and only as many as the room holds, and
// holds a pod that fits behind the held pods ahead of it (waiters.Gate.Judge). It
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
	if p.Passes(pod) || pod.Annotations[gpuv1alpha1.GangHoldAnnotation] != "" {
		return nil
	}
	req, err := p.parser.Parse(pod)
	if err != nil || len(req.Containers) == 0 {
		return nil
	}
	if p.Unsynced.Wait(pod) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, waiters.NotSynced)
	}
	if _, holding := p.view.Pod(pod.UID); holding || p.CouldPreempt(pod) {
		return nil
	}
	return p.judge(pod, req.Request, p.rules, p.view)
}

// fitGate is the fit gate's memory and rules (waiters.Gate), in plugin
// and in DRA mode.
type fitGate struct{ waiters.Gate }

// judge is waiters.Gate.Judge as kube-scheduler hears it: a held pod is
// unschedulable and unresolvable until the requeuer activates it.
func (g *fitGate) judge(pod *v1.Pod, req *placement.Request, rules view.Rules, v *view.View) *fwk.Status {
	if held, why := g.Judge(pod, req, rules, v); held {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, why)
	}
	return nil
}

package plugin

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/scheduler/fitgate"
	"github.com/tessera-gpu/tessera/scheduler/plugin/drascore"
	"github.com/tessera-gpu/tessera/scheduler/quota"
	"github.com/tessera-gpu/tessera/scheduler/view"
	"github.com/tessera-gpu/tessera/scheduler/waiters"
)

// DRAFitGateName is the DRA fit gate's name in a KubeSchedulerConfiguration.
const DRAFitGateName = "TesseraDRAFitGate"

var (
	_ fwk.PreEnqueuePlugin  = (*DRAFitGate)(nil)
	_ fwk.EnqueueExtensions = (*DRAFitGate)(nil)
	_ fwk.PreFilterPlugin   = (*DRAFitGate)(nil)
	_ fwk.ReservePlugin     = (*DRAFitGate)(nil)
	_ fwk.PostFilterPlugin  = (*DRAFitGate)(nil)
)

// DRAFitGate is the fit gate of DRA mode: it keeps pods whose claims of
// Tessera's GPUs no node's devices could hold now out of kube-scheduler's
// active queue, as FitGate does in plugin mode, from the ResourceSlices
// and the capacity the allocated claims consume (see draFeed and
// draRequest), and releases them as claims are deallocated and slices
// change, in kube-scheduler's queue order and only as many as the room
// holds. It follows each pod's scheduling cycles (PreFilter, Reserve,
// PostFilter) for the requeuer, and registers no cluster events: the
// requeuer activates held pods.
type DRAFitGate struct {
	fitGate
	claims  drascore.ClaimGetter
	classes []string
	// rules tell the namespaces' GPU quotas, and view what their
	// allocated claims use: a pod its quota turns away waits on the
	// quota, as in plugin mode, not held here.
	rules view.Rules
	view  *view.View
}

// NewDRAFitGate builds the DRA fit gate of a profile from its arguments
// (see decodeDRAGateArgs), over informers on ResourceSlices,
// ResourceClaims and pods from the handle's informer factory; it refuses
// to build when the scheduler has no DRA manager. With parking, it parks
// the pods it holds outside kube-scheduler's queue, watching the
// profile's pending pods through kube-scheduler's pod informer without
// the screen, which keeps parked pods from the handle's handlers.
func NewDRAFitGate(ctx context.Context, obj runtime.Object, h fwk.Handle, parking *Parking) (fwk.Plugin, error) {
	classes, err := decodeDRAGateArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s plugin arguments: %w", DRAFitGateName, err)
	}
	dra := h.SharedDRAManager()
	if dra == nil {
		return nil, errors.New(DRAFitGateName + " needs kube-scheduler's DynamicResourceAllocation feature, which is off")
	}
	logger := klog.FromContext(ctx).WithValues("plugin", DRAFitGateName)
	clk := clock.RealClock{}
	v := view.New()
	quotas := quota.NewLister(h.SharedInformerFactory().Core().V1().ResourceQuotas().Lister())
	rules := view.Rules{HeartbeatMaxAge: draAlive, Quotas: quotas, CoresResource: v1.ResourceName(drascore.CoresField)}
	rq := waiters.NewQueue(h, logger, v, clk, rules)
	var pods coreinformers.PodInformer = h.SharedInformerFactory().Core().V1().Pods()
	var kube kubernetes.Interface
	if parking != nil {
		// The handle's informer keeps parked pods from its handlers.
		if kube, pods, err = pendingPods(h, parking.Screen); err != nil {
			return nil, err
		}
	}
	ready, priorities, err := watchDRA(h, newDRAFeed(v, clk, rq.Freed, trackedBy(dra.ResourceClaims())), rq, pods.Informer())
	if err != nil {
		return nil, err
	}
	placing, err := watchPlacing(rq, pods)
	if err != nil {
		return nil, err
	}
	reasons := waiters.NewReasons(h.ClientSet(), h.EventRecorder(), clk, rq.StillHeld, placing, FieldManager)
	go reasons.Run(ctx)
	waiting := waiters.NewUnsynced(ready)
	go rq.JudgeWaited(ctx, waiting, "DRA view", reasons)
	go rq.Sweep(ctx)
	g := &DRAFitGate{
		fitGate: fitGate{waiters.NewGate(h.ProfileName(), rq, priorities, reasons, waiting)},
		claims:  dra.ResourceClaims(),
		classes: classes,
		rules:   rules,
		view:    v,
	}
	if parking != nil {
		if err := park(ctx, rq, parking, kube, pods, ready, placing, func(pod *v1.Pod) { g.PreEnqueue(ctx, pod) }); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// watchDRA feeds the view from the informers on slices and claims, the
// priorities from pods, and tells the requeuer of pods deleted, as
// pending says; ready reports whether all have synced.
func watchDRA(h fwk.Handle, feed *draFeed, rq *waiters.Queue, pending cache.SharedIndexInformer) (ready func() bool, priorities *fitgate.Priorities, err error) {
	factory := h.SharedInformerFactory()
	priorities = waiters.NewPriorities(rq)
	var synced []cache.ResourceEventHandlerRegistration
	for _, w := range []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{factory.Resource().V1().ResourceSlices().Informer(), feed.sliceHandler()},
		{factory.Resource().V1().ResourceClaims().Informer(), feed.claimHandler()},
		{factory.Core().V1().Pods().Informer(), priorities.Handler()},
		{pending, cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
			if pod, ok := unwrap(obj).(*v1.Pod); ok {
				rq.Forget(pod.UID)
			}
		}}},
	} {
		reg, err := w.informer.AddEventHandler(w.handler)
		if err != nil {
			return nil, nil, fmt.Errorf("%s watching the cluster: %w", DRAFitGateName, err)
		}
		synced = append(synced, reg)
	}
	return func() bool {
		for _, reg := range synced {
			if !reg.HasSynced() {
				return false
			}
		}
		return true
	}, priorities, nil
}

// Name returns the gate's name.
func (g *DRAFitGate) Name() string { return DRAFitGateName }

// EventsToRegister registers no events: the requeuer activates held pods.
func (g *DRAFitGate) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return nil, nil
}

// PreEnqueue holds a pod of the profile whose claims of Tessera's GPUs no
// node's devices could hold now, but some could once claims free, and
// tells it why. It never holds a pod bound or nominated, of a gang, one
// that could preempt a lower-priority pod, one without such claims or
// whose claims are not all there yet (DynamicResources waits for them),
// one its namespace's GPU quota turns away (it waits on the quota), nor
// one no node could hold even with its GPUs all free, which
// kube-scheduler tells why.
func (g *DRAFitGate) PreEnqueue(_ context.Context, pod *v1.Pod) *fwk.Status {
	if g.Passes(pod) || len(pod.Spec.ResourceClaims) == 0 {
		return nil
	}
	req, ok := draRequest(pod, g.claims, g.classes)
	if !ok {
		return nil
	}
	if g.Unsynced.Wait(pod) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, waiters.NotSynced)
	}
	if g.CouldPreempt(pod) {
		return nil
	}
	return g.judge(pod, req, g.rules, g.view)
}

// PreFilter tells the requeuer that the pod's cycle starts, and under a
// backlog hands kube-scheduler only the nodes whose GPUs could hold the
// pod's claims (see fitGate.narrow), so that its allocator does not try
// every node.
func (g *DRAFitGate) PreFilter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	req, ok := draRequest(pod, g.claims, g.classes)
	if !ok {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	g.Waiters.Waiting(pod, req)
	if narrowed := g.narrow(pod, req, len(nodes)); narrowed != nil {
		return narrowed, nil
	}
	return nil, fwk.NewStatus(fwk.Skip)
}

// PreFilterExtensions returns nil: the gate filters nothing.
func (g *DRAFitGate) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Reserve tells the requeuer that the pod is placed.
func (g *DRAFitGate) Reserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	g.Waiters.Placed(pod.UID, nodeName)
	return nil
}

// Unreserve does nothing: the claims' deallocation frees their room.
func (g *DRAFitGate) Unreserve(context.Context, fwk.CycleState, *v1.Pod, string) {}

// PostFilter leaves the room the pod was activated for to others; it
// makes no room itself.
func (g *DRAFitGate) PostFilter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	g.Waiters.Failed(pod.UID)
	return nil, fwk.NewStatus(fwk.Unschedulable)
}

package plugin

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/topologyaware"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/scheduler/commit"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/podrequest"
	"github.com/tessera-gpu/tessera/scheduler/preemption"
	"github.com/tessera-gpu/tessera/scheduler/view"
	"github.com/tessera-gpu/tessera/scheduler/viewsync"
	"github.com/tessera-gpu/tessera/scheduler/waiters"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = "Tessera"

// FieldManager names the plugin in the managed fields of what it writes.
const FieldManager = "tessera-scheduler-plugin"

var (
	_ fwk.PreFilterPlugin     = (*Plugin)(nil)
	_ fwk.PreFilterExtensions = (*Plugin)(nil)
	_ fwk.FilterPlugin        = (*Plugin)(nil)
	_ fwk.ScorePlugin         = (*Plugin)(nil)
	_ fwk.ScoreExtensions     = (*Plugin)(nil)
	_ fwk.ReservePlugin       = (*Plugin)(nil)
	_ fwk.BindPlugin          = (*Plugin)(nil)
	_ fwk.PostFilterPlugin    = (*Plugin)(nil)
	_ fwk.EnqueueExtensions   = (*Plugin)(nil)
)

// Plugin places pods' GPU slices inside kube-scheduler.
type Plugin struct {
	view      *view.View
	parser    podrequest.Parser
	committer *commit.Committer
	clock     clock.PassiveClock
	requeue   *waiters.Queue
	ready     func() bool
	// rules keep nodes from taking pods whatever their GPUs' usage.
	rules view.Rules
	// recorder records warning events on pods; nil records none.
	recorder events.EventRecorder
	// notifier tells a preemptor which pods go for it, once per decision.
	notifier *preemption.Notifier
	// dryRuns are the victims of preemption's dry runs, per preemptor and
	// node.
	dryRuns dryRuns
	// handle lists kube-scheduler's snapshot of the nodes.
	handle fwk.Handle
	// backoff holds back a PodGroup's pod whose binding failed.
	backoff *bindBackoff
	// gangs hold back the bindings of a gang's pods placed together until
	// all of them can be bound.
	gangs *gangBarriers
	// topology proposes the placements of a PodGroup with a topology
	// constraint: kube-scheduler's own generator, which a profile with
	// Tessera's cannot also enable.
	topology fwk.PlacementGeneratePlugin
	// fitters hold scratch memory for Filter and Score, which
	// kube-scheduler runs on many nodes at once.
	fitters sync.Pool

	// fitGate is the fit gate's (see FitGate).
	fitGate
}

// New builds the plugin from its arguments (the fields of the extender's
// configuration that concern placement and its metrics listener, see
// decodeArgs) over the view that scheduler/viewsync keeps, and starts the
// informers, the tracker and, with metricsAddress, the metrics listener,
// which run until ctx ends. With parking, the fit gate parks the pods it
// holds outside kube-scheduler's queue.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, parking *Parking) (fwk.Plugin, error) {
	cfg, err := decodeArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s plugin arguments: %w", Name, err)
	}
	logger := klog.FromContext(ctx).WithValues("plugin", Name)
	ctx = klog.NewContext(ctx, logger)
	var pods cache.SharedIndexInformer
	if parking != nil {
		if pods, err = parking.Screen.unscreened(); err != nil {
			return nil, err
		}
	}
	// Its requests wait out a restarting kube-apiserver as the extender's
	// do: client-go alone sleeps 5 s on each 503, and the in-flight check
	// that reads an allocation gives up sooner, holding the node's turn.
	keeper, err := viewsync.New(viewsync.Config{
		Options:    cfg,
		RestConfig: jsonConfig(h),
		Kube:       h.ClientSet(),
		// Only the pods of this profile can hold allocations the plugin made.
		SchedulerName: h.ProfileName(),
		FieldManager:  FieldManager,
		// The view, parking among its readers, reads kube-scheduler's
		// informer: each pod is read from the API once, not once more for
		// the view.
		Pods: pods,
	})
	if err != nil {
		return nil, err
	}
	rules := keeper.Rules()
	rq := waiters.NewQueue(h, logger, keeper.View, keeper.Clock, rules)
	priorities := waiters.NewPriorities(rq)
	prioritiesSynced, err := keeper.Pods.Informer().AddEventHandler(priorities.Handler())
	if err != nil {
		return nil, fmt.Errorf("watching pods' priorities: %w", err)
	}
	ready := func() bool { return keeper.HasSynced() && prioritiesSynced.HasSynced() }
	backoff := newBindBackoff(ctx, keeper.Clock, h)
	gangs := newGangBarriers(logger, keeper.Clock, gangBindTimeout, backoff.failed)
	if _, err := keeper.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: gangs.podDeleted}); err != nil {
		return nil, fmt.Errorf("watching the deletion of gangs' pods: %w", err)
	}
	if err := keeper.Start(ctx, rq); err != nil {
		return nil, err
	}
	topology, err := topologyaware.New(ctx, nil, h, feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate))
	if err != nil {
		return nil, fmt.Errorf("building kube-scheduler's topology placement generator: %w", err)
	}
	placing, err := watchPlacing(rq, keeper.Pods)
	if err != nil {
		return nil, err
	}
	reasons := waiters.NewReasons(keeper.Kube, h.EventRecorder(), keeper.Clock, rq.StillHeld, placing, FieldManager)
	go reasons.Run(ctx)
	waiting := waiters.NewUnsynced(ready)
	go rq.JudgeWaited(ctx, waiting, "GPU view", reasons)
	go rq.Sweep(ctx)
	// kube-scheduler's own /metrics knows nothing of the GPUs.
	if _, err := keeper.ServeMetrics(ctx, "plugin"); err != nil {
		return nil, err
	}
	p := &Plugin{
		view: keeper.View,
		parser: podrequest.Parser{
			ResourceNames:     cfg.ResourceNames,
			DefaultNodePolicy: cfg.DefaultNodePolicy,
			DefaultGPUPolicy:  cfg.DefaultGPUPolicy,
		},
		committer: &commit.Committer{
			Gate:            keeper.Gate,
			Clock:           keeper.Clock,
			Kube:            keeper.Kube,
			Tessera:         keeper.Tessera,
			FieldManager:    FieldManager,
			BindWaitTimeout: cfg.BindWaitTimeout.Duration,
		},
		clock:    keeper.Clock,
		requeue:  rq,
		ready:    ready,
		rules:    rules,
		recorder: h.EventRecorder(),
		notifier: preemption.NewNotifier(h.EventRecorder(), keeper.Clock, preemption.DefaultRepeat),
		handle:   h,
		backoff:  backoff,
		gangs:    gangs,
		topology: topology,
		fitters:  sync.Pool{New: func() any { return new(placement.Fitter) }},

		fitGate: fitGate{waiters.NewGate(h.ProfileName(), rq, priorities, reasons, waiting)},
	}
	if parking != nil {
		kube, err := parkingClient(h)
		if err != nil {
			return nil, err
		}
		if err := park(ctx, rq, parking, kube, keeper.Pods, ready, placing, func(pod *v1.Pod) { p.gate(pod) }); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// jsonConfig is kube-scheduler's client configuration, speaking JSON:
// kube-scheduler's asks for protobuf, which custom resources do not speak.
func jsonConfig(h fwk.Handle) *rest.Config {
	c := rest.CopyConfig(h.KubeConfig())
	c.ContentType, c.AcceptContentTypes = "application/json", "application/json"
	return c
}

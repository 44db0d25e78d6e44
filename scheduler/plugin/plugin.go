package plugin

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
	"github.com/tessera-gpu/tessera/generated/informers/externalversions"
	"github.com/tessera-gpu/tessera/internal/kubeclient"
	"github.com/tessera-gpu/tessera/scheduler/commit"
	"github.com/tessera-gpu/tessera/scheduler/freememory"
	"github.com/tessera-gpu/tessera/scheduler/inflight"
	"github.com/tessera-gpu/tessera/scheduler/liveness"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/podrequest"
	"github.com/tessera-gpu/tessera/scheduler/preemption"
	"github.com/tessera-gpu/tessera/scheduler/tracker"
	"github.com/tessera-gpu/tessera/scheduler/view"
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
	requeue   *requeuer
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
	// fitters hold scratch memory for Filter and Score, which
	// kube-scheduler runs on many nodes at once.
	fitters sync.Pool
}

// New builds the plugin from its arguments (the fields of the extender's
// configuration that concern placement, see Args) and starts its informers
// and tracker, which run until ctx ends.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	cfg, err := decodeArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s plugin arguments: %w", Name, err)
	}
	logger := klog.FromContext(ctx).WithValues("plugin", Name)
	ctx = klog.NewContext(ctx, logger)
	// kube-scheduler's configuration asks for protobuf, which custom
	// resources do not speak.
	// Its requests wait out a restarting kube-apiserver as the extender's
	// do: client-go alone sleeps 5 s on each 503, and the in-flight check
	// that reads an allocation gives up sooner, holding the node's turn.
	clk := clock.RealClock{}
	restConfig := kubeclient.WaitForRestarts(h.KubeConfig(), clk)
	restConfig.ContentType, restConfig.AcceptContentTypes = "application/json", "application/json"
	restConfig.UserAgent = FieldManager
	tessera, err := versioned.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("creating Tessera client: %w", err)
	}
	kube := h.ClientSet()
	trim := tracker.Trim(cfg.ResourceNames)
	// Only the pods of this profile can hold allocations the plugin made.
	pods := informers.NewSharedInformerFactoryWithOptions(kube, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.schedulerName", h.ProfileName()).String()
		}),
		informers.WithTransform(trim))
	gpus := externalversions.NewSharedInformerFactoryWithOptions(tessera, 0, externalversions.WithTransform(trim))
	// The device plugins' Leases, their heartbeats.
	leases := informers.NewSharedInformerFactoryWithOptions(kube, 0,
		informers.WithNamespace(cfg.LeaseNamespace), informers.WithTransform(trim))

	v := view.New()
	// The tracker and the marker age the nodes' Leases alike.
	renewals := liveness.NewRenewals(clk)
	gate := inflight.NewGate(clk, cfg.InFlightTTL.Duration, inflight.DefaultVerifyAfter, tracker.NewTurnVerifier(v, kube, tessera))
	rules := view.Rules{HeartbeatMaxAge: cfg.HeartbeatMaxAge.Duration, HAMiCoreMissing: cfg.HAMiCoreMissing}
	rq := newRequeuer(h, logger, v, clk, rules)
	t, err := tracker.New(ctx, tracker.Config{
		View:              v,
		Gate:              gate,
		Clock:             clk,
		Kube:              kube,
		Tessera:           tessera,
		Pods:              pods.Core().V1().Pods(),
		GPUNodes:          gpus.Gpu().V1alpha1().GPUNodes(),
		Allocations:       gpus.Gpu().V1alpha1().GPUAllocations(),
		Leases:            leases.Coordination().V1().Leases(),
		Renewals:          renewals,
		Requeue:           rq,
		HeartbeatMaxAge:   cfg.HeartbeatMaxAge.Duration,
		SweepInterval:     cfg.OrphanSweepInterval.Duration,
		ReservationMaxAge: 2*cfg.BindWaitTimeout.Duration + cfg.InFlightTTL.Duration,
	})
	if err != nil {
		return nil, err
	}
	// The free memory that kubectl get gpunodes shows, as the extender writes it.
	free := freememory.New(v, gpus.Gpu().V1alpha1().GPUNodes().Lister(), tessera, clk, t.HasSynced, FieldManager)
	// kubectl get gpunodes says a node is stale when the scheduler thinks so.
	marker, err := liveness.New(ctx, liveness.Config{
		Tessera:      tessera,
		FieldManager: liveness.FieldManager,
		GPUNodes:     gpus.Gpu().V1alpha1().GPUNodes(),
		Leases:       leases.Coordination().V1().Leases(),
		Namespace:    cfg.LeaseNamespace,
		Renewals:     renewals,
		Clock:        clk,
		MaxAge:       cfg.HeartbeatMaxAge.Duration,
	})
	if err != nil {
		return nil, err
	}
	pods.Start(ctx.Done())
	gpus.Start(ctx.Done())
	leases.Start(ctx.Done())
	go t.Run(ctx)
	go free.Run(ctx)
	go marker.Run(ctx)

	return &Plugin{
		view: v,
		parser: podrequest.Parser{
			ResourceNames:     cfg.ResourceNames,
			DefaultNodePolicy: cfg.DefaultNodePolicy,
			DefaultGPUPolicy:  cfg.DefaultGPUPolicy,
		},
		committer: &commit.Committer{
			Gate:            gate,
			Clock:           clk,
			Kube:            kube,
			Tessera:         tessera,
			FieldManager:    FieldManager,
			BindWaitTimeout: cfg.BindWaitTimeout.Duration,
		},
		clock:    clk,
		requeue:  rq,
		ready:    t.HasSynced,
		rules:    rules,
		recorder: h.EventRecorder(),
		notifier: preemption.NewNotifier(h.EventRecorder(), clk, preemption.DefaultRepeat),
		handle:   h,
		fitters:  sync.Pool{New: func() any { return new(placement.Fitter) }},
	}, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

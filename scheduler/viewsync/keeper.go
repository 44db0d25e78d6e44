package viewsync

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
	"github.com/tessera-gpu/tessera/generated/informers/externalversions"
	"github.com/tessera-gpu/tessera/internal/kubeclient"
	"github.com/tessera-gpu/tessera/internal/podfilter"
	"github.com/tessera-gpu/tessera/scheduler/freememory"
	"github.com/tessera-gpu/tessera/scheduler/gangfit"
	"github.com/tessera-gpu/tessera/scheduler/inflight"
	"github.com/tessera-gpu/tessera/scheduler/liveness"
	"github.com/tessera-gpu/tessera/scheduler/metrics"
	"github.com/tessera-gpu/tessera/scheduler/options"
	"github.com/tessera-gpu/tessera/scheduler/podrequest"
	"github.com/tessera-gpu/tessera/scheduler/quota"
	"github.com/tessera-gpu/tessera/scheduler/tracker"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// Config is what a front end tells the keeper.
type Config struct {
	// Options are the scheduler's configuration: resource names, Lease
	// namespace and heartbeat age, in-flight TTL, bind wait, orphan sweep,
	// allocation metrics.
	Options *options.Config
	// RestConfig reaches the API server, with the front end's own settings
	// (rate limits, content type); New copies it, waits out a restarting
	// kube-apiserver on every request and names FieldManager as the user
	// agent.
	RestConfig *rest.Config
	// Kube is the Kubernetes client to use; nil makes one from RestConfig.
	Kube kubernetes.Interface
	// SchedulerName selects the pods watched: only those of the front end's
	// profile can hold the allocations it made.
	SchedulerName string
	// FieldManager names the front end in what it writes.
	FieldManager string
	// Pods, when set, is an informer on every pod, whole, that the front
	// end's scheduler runs and the keeper reads SchedulerName's pods from
	// (tessera-scheduler's: kube-scheduler's own), instead of listing and
	// watching them again: at a first start over 180,000 waiting pods,
	// each list of them keeps the API server busy for tens of seconds.
	// Unset, the keeper watches SchedulerName's pods itself, trimmed as
	// tracker.Trim does.
	Pods cache.SharedIndexInformer
	// Clock defaults to the real clock.
	Clock clock.WithTicker
}

// Keeper is the view and what keeps it in step with the API.
type Keeper struct {
	// Kube and Tessera are the clients every front end writes with.
	Kube    kubernetes.Interface
	Tessera versioned.Interface
	// Clock is Config's, or the real clock.
	Clock clock.WithTicker
	// View holds every GPU and the pods placed on them; Gate lets one pod
	// per node be in flight.
	View *view.View
	Gate *inflight.Gate
	// Pods is the informer on the profile's pods: Config.Pods, whole, or
	// the keeper's own, trimmed as tracker.Trim does.
	Pods coreinformers.PodInformer
	// Quotas tell the namespaces' GPU limits, from the ResourceQuotas.
	Quotas *quota.Lister

	opts         *options.Config
	fieldManager string
	dynamic      dynamic.Interface
	// gangFit serves Kueue's gang-fit AdmissionCheck, when enabled; set
	// by Start, read by the metrics and readiness handlers.
	gangFit atomic.Pointer[gangfit.Controller]
	kube    informers.SharedInformerFactory
	tessera externalversions.SharedInformerFactory
	// leases watches the namespace of the nodes' Leases only.
	leases informers.SharedInformerFactory
	// quotas watches every namespace's ResourceQuotas, which the pods'
	// field selector of kube would not select; with gang-fit, nodes.
	quotas  informers.SharedInformerFactory
	tracker *tracker.Tracker
	// state serves the per-GPU and per-node series.
	state http.Handler
	wg    sync.WaitGroup
}

// New makes the clients, the view, the gate and the informers; nothing
// runs until Start.
func New(cfg Config) (*Keeper, error) {
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	restConfig := kubeclient.WaitForRestarts(cfg.RestConfig, clk)
	restConfig.UserAgent = cfg.FieldManager
	kube := cfg.Kube
	if kube == nil {
		var err error
		if kube, err = kubeclient.New(restConfig); err != nil {
			return nil, fmt.Errorf("creating Kubernetes client: %w", err)
		}
	}
	tessera, err := versioned.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("creating Tessera client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("creating dynamic client: %w", err)
	}
	o := cfg.Options
	trim := tracker.Trim(o.ResourceNames)
	k := &Keeper{
		View:         view.New(),
		Clock:        clk,
		Kube:         kube,
		Tessera:      tessera,
		opts:         o,
		fieldManager: cfg.FieldManager,
		dynamic:      dyn,
		kube: informers.NewSharedInformerFactoryWithOptions(kube, 0,
			informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
				lo.FieldSelector = fields.OneTermEqualSelector("spec.schedulerName", cfg.SchedulerName).String()
			}),
			informers.WithTransform(trim)),
		tessera: externalversions.NewSharedInformerFactoryWithOptions(tessera, 0, externalversions.WithTransform(trim)),
		leases: informers.NewSharedInformerFactoryWithOptions(kube, 0,
			informers.WithNamespace(o.LeaseNamespace), informers.WithTransform(trim)),
		quotas: informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTransform(trim)),
	}
	k.Gate = inflight.NewGate(clk, o.InFlightTTL.Duration, inflight.DefaultVerifyAfter, tracker.NewTurnVerifier(k.View, kube, tessera))
	if cfg.Pods != nil {
		k.Pods = podfilter.New(cfg.Pods, func(pod *corev1.Pod) bool { return pod.Spec.SchedulerName == cfg.SchedulerName })
	} else {
		k.Pods = k.kube.Core().V1().Pods()
	}
	k.Quotas = quota.NewLister(k.quotas.Core().V1().ResourceQuotas().Lister())
	k.state = metrics.NewState(k.View, metrics.StateOptions{Allocations: o.AllocationMetrics, Quotas: k.Quotas}).Handler()
	return k, nil
}

// Start builds the tracker, which tells requeue when GPUs may have become
// free (and, when requeue is a tracker.QuotaRequeue too, when a
// namespace's GPU quota may have room), the liveness marker and the
// free-memory publisher, and starts them and the informers; they run
// until ctx ends.
func (k *Keeper) Start(ctx context.Context, requeue tracker.Requeue) error {
	o := k.opts
	gpuNodes := k.tessera.Gpu().V1alpha1().GPUNodes()
	leases := k.leases.Coordination().V1().Leases()
	// The tracker and the marker age the nodes' Leases alike.
	renewals := liveness.NewRenewals(k.Clock)
	quotaRequeue, _ := requeue.(tracker.QuotaRequeue)
	frees := requeue
	if o.GangFit.Enabled {
		nodes := k.quotas.Core().V1().Nodes()
		gangFit := gangfit.New(gangfit.Config{
			Dynamic:        k.dynamic,
			Discovery:      k.Kube.Discovery(),
			View:           k.View,
			Rules:          k.Rules(),
			Parser:         podrequest.Parser{ResourceNames: o.ResourceNames, DefaultNodePolicy: o.DefaultNodePolicy, DefaultGPUPolicy: o.DefaultGPUPolicy},
			Pods:           k.Pods.Lister(),
			Nodes:          nodes.Lister(),
			NodesSynced:    nodes.Informer().HasSynced,
			Kube:           k.Kube,
			LeaseNamespace: o.GangFit.LeaseNamespace,
			LeaseName:      o.GangFit.LeaseName,
			Requeue:        requeue,
			QuotaRequeue:   quotaRequeue,
			Clock:          k.Clock,
			ViewSynced:     func() bool { return k.tracker.HasSynced() },
			HoldTimeout:    o.GangFit.HoldTimeout.Duration,
			RetryAfter:     o.GangFit.RetryAfter.Duration,
		})
		// The check hears of every free too, and of nodes that may run
		// more pod sets than before, to try again at once the Workloads it
		// sent back.
		frees = FanOut{requeue, gangFit}
		if _, err := nodes.Informer().AddEventHandler(gangFit.NodeHandler()); err != nil {
			return fmt.Errorf("watching nodes for the gang-fit check: %w", err)
		}
		k.gangFit.Store(gangFit)
	}
	var err error
	k.tracker, err = tracker.New(ctx, tracker.Config{
		View:              k.View,
		Gate:              k.Gate,
		Clock:             k.Clock,
		Kube:              k.Kube,
		Tessera:           k.Tessera,
		Pods:              k.Pods,
		GPUNodes:          gpuNodes,
		Allocations:       k.tessera.Gpu().V1alpha1().GPUAllocations(),
		Leases:            leases,
		Renewals:          renewals,
		Requeue:           frees,
		QuotaRequeue:      quotaRequeue,
		Quotas:            k.quotas.Core().V1().ResourceQuotas(),
		HeartbeatMaxAge:   o.HeartbeatMaxAge.Duration,
		SweepInterval:     o.OrphanSweepInterval.Duration,
		ReservationMaxAge: 2*o.BindWaitTimeout.Duration + o.InFlightTTL.Duration,
	})
	if err != nil {
		return err
	}
	// kubectl get gpunodes says a node is stale when the scheduler thinks so.
	marker, err := liveness.New(ctx, liveness.Config{
		Tessera:      k.Tessera,
		FieldManager: liveness.FieldManager,
		GPUNodes:     gpuNodes,
		Leases:       leases,
		Namespace:    o.LeaseNamespace,
		Renewals:     renewals,
		Clock:        k.Clock,
		MaxAge:       o.HeartbeatMaxAge.Duration,
	})
	if err != nil {
		return err
	}
	// The free memory that kubectl get gpunodes shows.
	free := freememory.New(k.View, gpuNodes.Lister(), k.Tessera, k.Clock, k.tracker.HasSynced, k.fieldManager)
	runs := []func(context.Context){k.tracker.Run, marker.Run, free.Run}
	if gangFit := k.gangFit.Load(); gangFit != nil {
		runs = append(runs, gangFit.Run)
	}

	k.kube.Start(ctx.Done())
	k.tessera.Start(ctx.Done())
	k.leases.Start(ctx.Done())
	k.quotas.Start(ctx.Done())
	for _, run := range runs {
		k.wg.Go(func() { run(ctx) })
	}
	return nil
}

// HasSynced says whether the informers have synced and the view holds
// every GPU and allocation, and the room that the gang-fit check held
// before a restart: before that a front end would place pods on a partial
// view.
func (k *Keeper) HasSynced() bool {
	gangFit := k.gangFit.Load()
	return k.tracker.HasSynced() && (gangFit == nil || gangFit.HasSynced())
}

// Rules are the node and quota rules of the configuration, which every
// placement by the view follows.
func (k *Keeper) Rules() view.Rules {
	return view.Rules{HeartbeatMaxAge: k.opts.HeartbeatMaxAge.Duration, HAMiCoreMissing: k.opts.HAMiCoreMissing, Quotas: k.Quotas, CoresResource: k.opts.ResourceNames.Cores}
}

// Stop waits for the informers, the tracker, the marker and the publisher,
// whose context has ended.
func (k *Keeper) Stop() {
	k.kube.Shutdown()
	k.tessera.Shutdown()
	k.leases.Shutdown()
	k.quotas.Shutdown()
	k.wg.Wait()
}

// FanOut tells every requeuer of each free and pod gone, and those that
// are tracker.QuotaRequeues of each namespace's quota freed.
type FanOut []tracker.Requeue

var _ tracker.QuotaRequeue = FanOut(nil)

// Freed tells each requeuer that GPUs may have freed on the node.
func (f FanOut) Freed(node string) {
	for _, r := range f {
		r.Freed(node)
	}
}

// Forget tells each requeuer that the pod is gone.
func (f FanOut) Forget(uid types.UID) {
	for _, r := range f {
		r.Forget(uid)
	}
}

// QuotaFreed tells each requeuer that watches quotas that the
// namespace's GPU quota may have room.
func (f FanOut) QuotaFreed(namespace string) {
	for _, r := range f {
		if q, ok := r.(tracker.QuotaRequeue); ok {
			q.QuotaFreed(namespace)
		}
	}
}

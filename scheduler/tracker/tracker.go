package tracker

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	coordinationinformers "k8s.io/client-go/informers/coordination/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
	gpuinformers "github.com/tessera-gpu/tessera/generated/informers/externalversions/gpu/v1alpha1"
	gpulisters "github.com/tessera-gpu/tessera/generated/listers/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/inflight"
	"github.com/tessera-gpu/tessera/scheduler/liveness"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// Config is what a Tracker needs.
type Config struct {
	// View and Gate are what the tracker keeps current.
	View *view.View
	Gate *inflight.Gate
	// Clock tells the age of reservations and paces retries.
	Clock clock.WithTicker

	// Kube reads pods the cache lacks; Tessera deletes orphaned allocations.
	Kube    kubernetes.Interface
	Tessera versioned.Interface

	// Pods should hold only the pods of the extender's scheduler profile,
	// trimmed with Trim.
	Pods coreinformers.PodInformer
	// GPUNodes and Allocations are informers on Tessera's objects, which
	// may be trimmed with Trim.
	GPUNodes    gpuinformers.GPUNodeInformer
	Allocations gpuinformers.GPUAllocationInformer
	// Leases is an informer on the namespace of the nodes' Leases, which
	// may be trimmed with Trim.
	Leases coordinationinformers.LeaseInformer
	// Renewals tells when each Lease was seen renewed; the liveness
	// Marker shares it.
	Renewals *liveness.Renewals
	// Quotas is an informer on ResourceQuotas, whose GPU limits the
	// scheduler enforces; nil for none. The view is not synced until it is.
	Quotas coreinformers.ResourceQuotaInformer

	// SweepInterval is how often every allocation is checked for a missing pod.
	SweepInterval time.Duration
	// Requeue is told when GPUs may have become free and when pods go;
	// nil for none.
	Requeue Requeue
	// QuotaRequeue is told when a namespace's GPU quota may have room for
	// more; nil for none.
	QuotaRequeue QuotaRequeue
	// HeartbeatMaxAge is how old a node's Lease may be before the node
	// takes no new pods; a node whose Lease is renewed again frees GPUs.
	HeartbeatMaxAge time.Duration
	// ReservationMaxAge is how long a bind's reservation may stand without
	// its GPUAllocation appearing before it is dropped, once the bind no
	// longer waits for its node's turn. It must be longer than any bind
	// takes after its turn began.
	ReservationMaxAge time.Duration
}

// Requeue makes kube-scheduler retry the pods the extender turned away.
type Requeue interface {
	// Freed says GPUs may have become free on the node, or it may take
	// more pods (its GPUNode appeared or changed, its heartbeat resumed):
	// the view holds the node as it is now.
	Freed(node string)
	// Forget drops a pod that is gone.
	Forget(uid types.UID)
}

// Tracker feeds informer events into the view and the in-flight gate.
type Tracker struct {
	view  *view.View
	gate  *inflight.Gate
	clock clock.WithTicker

	kube        kubernetes.Interface
	tessera     versioned.Interface
	pods        corelisters.PodLister
	allocations gpulisters.GPUAllocationLister

	requeue           Requeue
	quotaRequeue      QuotaRequeue
	renewals          *liveness.Renewals
	heartbeatMaxAge   time.Duration
	orphans           workqueue.TypedRateLimitingInterface[cache.ObjectName]
	sweepInterval     time.Duration
	reservationMaxAge time.Duration
	synced            []cache.InformerSynced
}

// New registers the tracker's handlers on the informers. Start the
// informers and then Run.
func New(ctx context.Context, cfg Config) (*Tracker, error) {
	t := &Tracker{
		view:              cfg.View,
		gate:              cfg.Gate,
		clock:             cfg.Clock,
		kube:              cfg.Kube,
		tessera:           cfg.Tessera,
		pods:              cfg.Pods.Lister(),
		allocations:       cfg.Allocations.Lister(),
		sweepInterval:     cfg.SweepInterval,
		reservationMaxAge: cfg.ReservationMaxAge,
		requeue:           cfg.Requeue,
		quotaRequeue:      cfg.QuotaRequeue,
		renewals:          cfg.Renewals,
		heartbeatMaxAge:   cfg.HeartbeatMaxAge,
		orphans: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Clock: cfg.Clock},
		),
	}
	logger := klog.FromContext(ctx)
	opts := cache.HandlerOptions{Logger: &logger}
	type registration struct {
		what     string
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}
	regs := []registration{
		{"GPUNodes", cfg.GPUNodes.Informer(), t.gpuNodeHandler()},
		{"GPUAllocations", cfg.Allocations.Informer(), t.allocationHandler(logger)},
		{"pods", cfg.Pods.Informer(), t.podHandler()},
		{"Leases", cfg.Leases.Informer(), t.leaseHandler()},
	}
	if cfg.Quotas != nil {
		regs = append(regs, registration{"ResourceQuotas", cfg.Quotas.Informer(), t.quotaHandler()})
	}
	for _, reg := range regs {
		r, err := reg.informer.AddEventHandlerWithOptions(reg.handler, opts)
		if err != nil {
			return nil, fmt.Errorf("watching %s: %w", reg.what, err)
		}
		t.synced = append(t.synced, r.HasSynced)
	}
	return t, nil
}

// HasSynced reports whether every informer has delivered its initial list
// to the tracker, so that the view holds everything the API does.
func (t *Tracker) HasSynced() bool {
	for _, synced := range t.synced {
		if !synced() {
			return false
		}
	}
	return true
}

// Run waits for the informers to sync, then deletes orphaned allocations
// and sweeps for them until ctx ends.
func (t *Tracker) Run(ctx context.Context) {
	defer t.orphans.ShutDown()
	logger := klog.FromContext(ctx)
	if !cache.WaitForNamedCacheSyncWithContext(ctx, t.synced...) {
		return
	}
	logger.Info("GPU view synced")
	go wait.UntilWithContext(ctx, t.runOrphanWorker, time.Second)
	wait.JitterUntilWithContext(ctx, t.Sweep, t.sweepInterval, 0.1, true)
}

// freed tells the requeuer that GPUs may have become free on the node.
func (t *Tracker) freed(node string) {
	if t.requeue != nil {
		t.requeue.Freed(node)
	}
}

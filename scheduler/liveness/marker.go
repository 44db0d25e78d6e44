package liveness

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	coordinationinformers "k8s.io/client-go/informers/coordination/v1"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
	gpuinformers "github.com/tessera-gpu/tessera/generated/informers/externalversions/gpu/v1alpha1"
	gpulisters "github.com/tessera-gpu/tessera/generated/listers/gpu/v1alpha1"
)

// FieldManager names the Marker's writes: its own, so that its apply of
// the Ready condition and the extender's other status writes do not
// remove each other's fields.
const FieldManager = "tessera-node-liveness"

// Config is what a Marker needs.
type Config struct {
	// Tessera writes the GPUNodes' Ready condition.
	Tessera versioned.Interface
	// FieldManager names the Marker's writes.
	FieldManager string
	// GPUNodes and Leases are informers on the GPUNodes and on the
	// namespace of the nodes' Leases.
	GPUNodes gpuinformers.GPUNodeInformer
	Leases   coordinationinformers.LeaseInformer
	// Namespace holds the nodes' Leases.
	Namespace string
	// Renewals tells when each Lease was seen renewed; the tracker that
	// feeds the scheduler's view shares it, so that the two agree on
	// which nodes are stale.
	Renewals *Renewals
	// Clock tells the Leases' age and schedules each node's next check.
	// It is the clock of Renewals.
	Clock clock.WithTicker
	// MaxAge is how old a node's Lease may be before the node is stale.
	MaxAge time.Duration
}

// Marker sets the Ready condition of stale nodes' GPUNodes to Unknown.
// Every extender replica may run one: each writes only a node it finds
// stale and not yet marked, with the GPUNode's resource version as a
// precondition, so replicas do not undo each other's or the plugin's work.
type Marker struct {
	cfg      Config
	gpuNodes gpulisters.GPUNodeLister
	leases   coordinationlisters.LeaseLister
	queue    workqueue.TypedRateLimitingInterface[string]
	synced   []cache.InformerSynced
}

// New registers the Marker's handlers on the informers. Start the
// informers and then Run.
func New(ctx context.Context, cfg Config) (*Marker, error) {
	m := &Marker{
		cfg:      cfg,
		gpuNodes: cfg.GPUNodes.Lister(),
		leases:   cfg.Leases.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "liveness", Clock: cfg.Clock},
		),
	}
	logger := klog.FromContext(ctx)
	opts := cache.HandlerOptions{Logger: &logger}
	enqueue := func(obj any) {
		if o, err := meta.Accessor(unwrap(obj)); err == nil {
			m.queue.Add(o.GetName())
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}
	for _, informer := range []cache.SharedIndexInformer{cfg.GPUNodes.Informer(), cfg.Leases.Informer()} {
		r, err := informer.AddEventHandlerWithOptions(handler, opts)
		if err != nil {
			return nil, fmt.Errorf("watching for stale nodes: %w", err)
		}
		m.synced = append(m.synced, r.HasSynced)
	}
	// A Lease that goes away leaves its node without a heartbeat.
	if _, err := cfg.Leases.Informer().AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{DeleteFunc: enqueue}, opts); err != nil {
		return nil, fmt.Errorf("watching for stale nodes: %w", err)
	}
	return m, nil
}

// Run checks nodes as their Leases change and when they would go stale,
// until ctx ends.
func (m *Marker) Run(ctx context.Context) {
	defer m.queue.ShutDown()
	if !cache.WaitForNamedCacheSyncWithContext(ctx, m.synced...) {
		return
	}
	go wait.UntilWithContext(ctx, m.work, time.Second)
	<-ctx.Done()
}

func (m *Marker) work(ctx context.Context) {
	for m.next(ctx) {
	}
}

func (m *Marker) next(ctx context.Context) bool {
	name, quit := m.queue.Get()
	if quit {
		return false
	}
	defer m.queue.Done(name)
	recheck, err := m.check(ctx, name)
	switch {
	case err != nil:
		klog.FromContext(ctx).Error(err, "Marking a stale node", "gpuNode", name)
		m.queue.AddRateLimited(name)
	default:
		m.queue.Forget(name)
		if recheck > 0 {
			m.queue.AddAfter(name, recheck)
		}
	}
	return true
}

// check marks the node if it is stale and not yet marked. It returns when
// to look again: when the Lease, if not renewed before, goes stale.
func (m *Marker) check(ctx context.Context, name string) (time.Duration, error) {
	gn, err := m.gpuNodes.Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	// A node whose plugin has not yet made its Lease is given the age
	// from the GPUNode's creation, which the plugin makes first.
	since, what := gn.CreationTimestamp.Time, "has not created its Lease"
	lease, err := m.leases.Leases(m.cfg.Namespace).Get(name)
	switch {
	case err == nil && lease.Spec.RenewTime != nil:
		// Aged from when the scheduler saw it renewed, by its own clock:
		// the node stamps renewTime with a clock that may be off.
		since, what = m.cfg.Renewals.Observe(lease), "has not renewed its Lease"
	case err != nil && !apierrors.IsNotFound(err):
		return 0, err
	}
	age := m.cfg.Clock.Since(since)
	if age <= m.cfg.MaxAge {
		// One second late, so that the Lease is past its age by then.
		return m.cfg.MaxAge - age + time.Second, nil
	}
	if !needsMark(gn) {
		return 0, nil
	}
	message := fmt.Sprintf("the device plugin %s for %s (the scheduler allows %s): the node takes no new GPU pods", what, age.Truncate(time.Second), m.cfg.MaxAge)
	err = m.mark(ctx, gn, message)
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		// The GPUNode changed since it was read: its next event brings it back.
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	klog.FromContext(ctx).Info("Marked node stale", "gpuNode", name, "age", age.Truncate(time.Second), "maxAge", m.cfg.MaxAge)
	return 0, nil
}

// needsMark reports whether the GPUNode still says its node is ready, or
// says nothing: a Ready condition already False or Unknown keeps its
// reason, which the scheduler's answer agrees with.
func needsMark(gn *gpuv1alpha1.GPUNode) bool {
	c := meta.FindStatusCondition(gn.Status.Conditions, gpuv1alpha1.GPUNodeReady)
	return c == nil || c.Status == metav1.ConditionTrue
}

func unwrap(obj any) any {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}

package gangfit

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/scheduler/podrequest"
	"github.com/tessera-gpu/tessera/scheduler/tracker"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// FieldManager names the check in the Workloads' and AdmissionChecks'
// status it writes.
const FieldManager = "tessera-gang-fit"

// kueuePollInterval is how often the check looks for Kueue's API while the
// cluster does not serve it.
const kueuePollInterval = 10 * time.Second

// Config is what the check needs from the scheduler.
type Config struct {
	// Dynamic reads and writes Kueue's objects; Discovery tells whether
	// the cluster serves them.
	Dynamic   dynamic.Interface
	Discovery discovery.DiscoveryInterface
	// View is where room is held, by Rules.
	View  *view.View
	Rules view.Rules
	// Parser reads the pod sets' GPU requests as the front ends read pods'.
	Parser podrequest.Parser
	// Pods are the scheduler's pods, to count those of an admitted
	// Workload already placed when its room is held again after a restart.
	Pods corelisters.PodLister
	// Nodes tell the nodes' labels and taints, which say where a pod set
	// may run; NodesSynced whether they are all known.
	Nodes       corelisters.NodeLister
	NodesSynced cache.InformerSynced
	// Kube writes the Lease of the election of the process that decides
	// the checks, LeaseNamespace/LeaseName.
	Kube           kubernetes.Interface
	LeaseNamespace string
	LeaseName      string
	// Requeue hears of the nodes whose held room was released, and
	// QuotaRequeue, if set, of the namespaces.
	Requeue      tracker.Requeue
	QuotaRequeue tracker.QuotaRequeue
	Clock        clock.PassiveClock
	// ViewSynced says whether the view holds every GPU and allocation,
	// which the room held again after a restart is decided on.
	ViewSynced cache.InformerSynced
	// HoldTimeout and RetryAfter are options.GangFit's.
	HoldTimeout time.Duration
	RetryAfter  time.Duration
}

// Controller serves the gang-fit AdmissionCheck.
type Controller struct {
	cfg       Config
	queue     workqueue.TypedRateLimitingInterface[string]
	workloads cache.SharedIndexInformer
	checks    cache.SharedIndexInformer
	flavors   cache.SharedIndexInformer
	// handlers are the registrations of the Workloads' and checks' event
	// handlers, synced once each has been told of every object listed.
	handlers []cache.ResourceEventHandlerRegistration
	// synced is set once the room of every admitted Workload is held again
	// after a start, or the cluster serves no Workloads.
	synced atomic.Bool
	// leading is set while this process holds the Lease and so decides
	// the checks.
	leading atomic.Bool

	mu sync.Mutex
	// held is the room held for each Workload, by namespace/name.
	held map[string]*holding
	// waiting are the Workloads the leader sent back to Kueue's queue
	// because their pods did not fit, with when; wake tells recheck that
	// room freed.
	waiting map[string]time.Time
	wake    chan struct{}
}

// holding is the room held for one admitted Workload.
type holding struct {
	uid       types.UID
	namespace string
	// gangs are the keys of its pod sets' held room; nil once released.
	gangs []string
	// until is when the hold times out.
	until time.Time
}

// New returns the check; nothing runs until Run.
func New(cfg Config) *Controller {
	f := dynamicinformer.NewDynamicSharedInformerFactory(cfg.Dynamic, 0)
	c := &Controller{
		cfg: cfg,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "gang-fit"}),
		workloads: f.ForResource(workloads).Informer(),
		checks:    f.ForResource(admissionChecks).Informer(),
		flavors:   f.ForResource(resourceFlavors).Informer(),
		held:      map[string]*holding{},
		waiting:   map[string]time.Time{},
		wake:      make(chan struct{}, 1),
	}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	workloadsReg, _ := c.workloads.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	})
	checksReg, _ := c.checks.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.activate(obj) },
		UpdateFunc: func(_, obj any) { c.activate(obj) },
	})
	c.handlers = []cache.ResourceEventHandlerRegistration{workloadsReg, checksReg}
	return c
}

// Leading says whether this process decides the checks.
func (c *Controller) Leading() bool { return c.leading.Load() }

// HasSynced says whether the room of every admitted Workload is held, so
// that the scheduler may place pods.
func (c *Controller) HasSynced() bool { return c.synced.Load() }

// Run serves the check until ctx ends. It waits for the cluster to serve
// Kueue's API first.
func (c *Controller) Run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	logger := klog.FromContext(ctx).WithName("gang-fit")
	if !c.served() {
		// Nothing can have been admitted before Kueue: there is no room to
		// hold again, and the scheduler need not wait.
		c.synced.Store(true)
		logger.Info("Kueue's Workloads are not served; waiting for them", "resource", workloads.String())
		if err := wait.PollUntilContextCancel(ctx, kueuePollInterval, false, func(context.Context) (bool, error) { return c.served(), nil }); err != nil {
			return
		}
	}
	go c.workloads.Run(ctx.Done())
	go c.checks.Run(ctx.Done())
	go c.flavors.Run(ctx.Done())
	synced := []cache.InformerSynced{c.flavors.HasSynced, c.cfg.NodesSynced, c.cfg.ViewSynced}
	for _, reg := range c.handlers {
		synced = append(synced, reg.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return
	}
	// Hold the room of every Workload admitted before this process
	// started, before it places any pod. Each is kept here, directly: the
	// queue's length does not count keys waiting to be retried, and
	// holding room again writes nothing that could fail.
	for _, key := range c.workloads.GetStore().ListKeys() {
		if err := c.sync(ctx, key); err != nil {
			logger.Error(err, "Holding an admitted Workload's room again", "workload", key)
		}
	}
	c.synced.Store(true)
	logger.Info("Serving the gang-fit admission check")
	// The election ends, giving the Lease back, before Run returns, so
	// that a process shutting down in a rollout hands over at once.
	var wg sync.WaitGroup
	wg.Go(func() { c.lead(ctx) })
	wg.Go(func() { c.recheck(ctx) })
	for c.next(ctx) {
	}
	wg.Wait()
}

// served reports whether the cluster serves Kueue's Workloads.
func (c *Controller) served() bool {
	list, err := c.cfg.Discovery.ServerResourcesForGroupVersion(workloads.GroupVersion().String())
	if err != nil {
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == workloads.Resource {
			return true
		}
	}
	return false
}

// next decides the next Workload in the queue; false when the queue is
// shut down.
func (c *Controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		klog.FromContext(ctx).Error(err, "Deciding the gang-fit check", "workload", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// release frees the room held for the Workload, if any, and tells the
// requeuers where it was.
func (c *Controller) release(key string) {
	c.mu.Lock()
	h, ok := c.held[key]
	delete(c.held, key)
	c.mu.Unlock()
	if ok && len(h.gangs) > 0 {
		c.free(h)
		c.roomFreed()
	}
}

// free releases a holding's gangs.
func (c *Controller) free(h *holding) {
	for _, gang := range h.gangs {
		for _, node := range c.cfg.View.ReleaseGang(gang) {
			c.cfg.Requeue.Freed(node)
		}
	}
	if c.cfg.QuotaRequeue != nil && len(h.gangs) > 0 {
		c.cfg.QuotaRequeue.QuotaFreed(h.namespace)
	}
	h.gangs = nil
}

package nodeagent

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Agent is the kubelet stand-in of one simulated node.
type Agent struct {
	// NodeName is the node whose pods the agent admits.
	NodeName string
	// PluginDir is where kubelet.sock is served and plugins put their sockets.
	PluginDir string
	// Kube is a client for pods.
	Kube kubernetes.Interface
	// DeviceResources are the extended resources served by device plugins:
	// a pod asking for one waits until its plugin registers. Other extended
	// resources (such as GPU memory, which only the scheduler extender
	// accounts) are ignored, as the kubelet ignores those its node does not
	// advertise.
	DeviceResources []string
	// PluginRegistryDir is where DRA plugins register (<driver>-reg.sock),
	// as the kubelet's plugins_registry; empty: pods with claims fail.
	PluginRegistryDir string
	// PodResourcesSocket is where the agent serves the kubelet's
	// pod-resources API; empty: it does not.
	PodResourcesSocket string

	mu       sync.Mutex
	draConns map[string]*grpc.ClientConn // driver → its plugin
	plugins  map[string]*plugin
	// What the kubelet checkpoints, kept from one Run to the next.
	claims  map[types.UID][]preparedClaim   // pod → claims prepared for it
	inUse   map[string]bool                 // device IDs held by running pods
	held    map[types.UID][]string          // pod → device IDs it holds
	results map[types.UID][]ContainerResult // pod → what the plugins answered
	// listed are the pods the pod-resources API lists: those admitted and
	// not yet seen end, and the one being admitted.
	listed map[types.UID]types.NamespacedName
	// paused, while open, holds admissions back (Pause).
	paused chan struct{}
	// restart holds the running pods whose containers the next Run starts
	// again (see Reboot).
	restart map[types.UID]bool
}

// Run serves kubelet.sock and admits the node's pods until ctx ends. Run
// again after it returned, it plays a restarted kubelet: what the
// kubelet keeps in its checkpoints (the claims it prepared for each pod,
// the devices its pods hold and the answers its containers got) is kept,
// running pods are left running, and the claims of pods that went while
// it was stopped are unprepared.
func (a *Agent) Run(ctx context.Context) error {
	a.mu.Lock()
	a.plugins, a.draConns = map[string]*plugin{}, map[string]*grpc.ClientConn{}
	if a.results == nil {
		a.inUse, a.held, a.results = map[string]bool{}, map[types.UID][]string{}, map[types.UID][]ContainerResult{}
		a.claims, a.restart = map[types.UID][]preparedClaim{}, map[types.UID]bool{}
		a.listed = map[types.UID]types.NamespacedName{}
	}
	a.mu.Unlock()
	defer a.closeDRAConns()
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("node", a.NodeName))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	errs := make(chan error, 2)
	if a.PodResourcesSocket != "" {
		l, err := a.listenPodResources()
		if err != nil {
			return err
		}
		go func() { errs <- a.servePodResources(ctx, l) }()
	}
	go func() { errs <- a.serveRegistration(ctx) }()

	factory := informers.NewSharedInformerFactoryWithOptions(a.Kube, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", a.NodeName).String()
		}))
	pods := factory.Core().V1().Pods()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]())
	enqueue := func(obj any) {
		if name, err := cache.DeletionHandlingObjectToName(obj); err == nil {
			queue.Add(name)
		}
	}
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: func(obj any) { a.onDelete(ctx, obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer func() { queue.ShutDown(); factory.Shutdown() }()
	if !cache.WaitForCacheSync(ctx.Done(), pods.Informer().HasSynced) {
		return fmt.Errorf("node %s: pod informer did not sync: %w", a.NodeName, context.Cause(ctx))
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for a.next(ctx, queue, pods.Lister().Pods) {
		}
	})
	wg.Go(func() { a.reconcileLoop(ctx, pods.Lister()) })

	var err error
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	// Both end before Run returns: a Run started next shares their state.
	cancel()
	queue.ShutDown()
	wg.Wait()
	return err
}

func (a *Agent) next(ctx context.Context, queue workqueue.TypedRateLimitingInterface[cache.ObjectName], lister func(string) corelisters.PodNamespaceLister) bool {
	name, shutdown := queue.Get()
	if shutdown {
		return false
	}
	defer queue.Done(name)
	// A stopped agent admits nothing more, as a stopped kubelet does.
	if ctx.Err() != nil {
		return false
	}
	pod, err := lister(name.Namespace).Get(name.Name)
	if err != nil {
		queue.Forget(name)
		return true
	}
	if err := a.sync(ctx, pod); err != nil {
		klog.FromContext(ctx).V(2).Info("Retrying pod", "pod", klog.KObj(pod), "err", err)
		queue.AddRateLimited(name)
		return true
	}
	queue.Forget(name)
	return true
}

func (a *Agent) onDelete(ctx context.Context, obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		a.release(pod.UID)
		a.unprepareClaims(ctx, pod.UID)
	}
}

func (a *Agent) closeDRAConns() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.draConns {
		_ = c.Close()
	}
}

// release frees the devices a pod holds.
func (a *Agent) release(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range a.held[uid] {
		delete(a.inUse, id)
	}
	delete(a.held, uid)
	delete(a.listed, uid)
}

// Results returns what the plugins answered for a pod's containers, in the
// order they were allocated, or nil if the pod was not admitted.
func (a *Agent) Results(uid types.UID) []ContainerResult {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.results[uid]
}

func (a *Agent) setPlugin(p *plugin) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if old := a.plugins[p.resource]; old != nil {
		_ = old.conn.Close()
	}
	a.plugins[p.resource] = p
}

func (a *Agent) plugin(resource string) *plugin {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.plugins[resource]
}

package allocator

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
)

// NodeAllocations holds the GPUAllocations of the node's pods that ask for
// the plugin's resource: those the kubelet calls Allocate for. It learns
// them from the node's pods, whose watch the API server indexes by node,
// reading each allocation by name (it is named like its pod) when its pod
// appears, and from the plugin's own status writes. A watch of the node's
// GPUAllocations would cost the API server, for every allocation event in
// the cluster, one selector check per node: it indexes only built-in
// resources by field.
//
// An allocation's spec does not change once its pod is bound, and only the
// plugin writes its status, so the copy read when the pod appears stays
// true until the plugin writes it. What the scheduler or the collector
// does to it afterwards (deleting it) happens after its pod ended or went,
// and the pod's own event drops the copy.
type NodeAllocations struct {
	tessera  versioned.Interface
	pods     corelisters.PodLister
	resource corev1.ResourceName
	queue    workqueue.TypedRateLimitingInterface[cache.ObjectName]
	synced   atomic.Bool

	// mu orders the reads of the pod cache with the changes of byPod, so
	// that a pod's copy is never kept after the pod's own event dropped it.
	mu    sync.RWMutex
	byPod map[cache.ObjectName]*gpuv1alpha1.GPUAllocation
}

// NewNodeAllocations returns the allocations of the pods that pods (the
// node's pod informer) sees ask for resource. Run fills it.
func NewNodeAllocations(tessera versioned.Interface, pods cache.SharedIndexInformer, resource corev1.ResourceName) (*NodeAllocations, error) {
	n := newNodeAllocations(tessera, corelisters.NewPodLister(pods.GetIndexer()), resource)
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingObjectToName(obj); err == nil {
			n.queue.Add(key)
		}
	}
	_, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	})
	if err != nil {
		return nil, fmt.Errorf("watching the node's pods for their GPUAllocations: %w", err)
	}
	return n, nil
}

func newNodeAllocations(tessera versioned.Interface, pods corelisters.PodLister, resource corev1.ResourceName) *NodeAllocations {
	return &NodeAllocations{
		tessera:  tessera,
		pods:     pods,
		resource: resource,
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]()),
		byPod:    map[cache.ObjectName]*gpuv1alpha1.GPUAllocation{},
	}
}

// Run reads the allocation of every pod in the pod cache, which must have
// synced, then follows the pods' events until ctx ends.
func (n *NodeAllocations) Run(ctx context.Context) {
	defer utilruntime.HandleCrash()
	go func() {
		<-ctx.Done()
		n.queue.ShutDown()
	}()
	n.Refresh(ctx)
	n.synced.Store(true)
	for n.next(ctx) {
	}
}

// Refresh reads now the allocation of each pod in the pod cache that asks
// for GPUs and whose allocation is not held, and drops those of pods that
// ended or went. The kubelet may call Allocate before the pod's event has
// been handled. A read that fails is retried later.
func (n *NodeAllocations) Refresh(ctx context.Context) {
	pods, err := n.pods.List(labels.Everything())
	if err != nil {
		klog.FromContext(ctx).Error(err, "Listing the node's pods")
	}
	for _, pod := range pods {
		key := cache.MetaObjectToName(pod)
		if err := n.sync(ctx, key); err != nil {
			n.queue.AddRateLimited(key)
		}
	}
}

// HasSynced reports whether the allocations of the pods in the pod cache
// when Run started have been read.
func (n *NodeAllocations) HasSynced() bool { return n.synced.Load() }

func (n *NodeAllocations) next(ctx context.Context) bool {
	key, shutdown := n.queue.Get()
	if shutdown {
		return false
	}
	defer n.queue.Done(key)
	if err := n.sync(ctx, key); err != nil {
		klog.FromContext(ctx).V(2).Info("Reading a pod's GPUAllocation failed; retrying", "pod", key, "err", err)
		n.queue.AddRateLimited(key)
		return true
	}
	n.queue.Forget(key)
	return true
}

// sync reads the allocation of the pod key names when the pod asks for
// GPUs and its copy is missing, and drops the copy once the pod has ended
// or gone. A pod with no allocation yet is read again on its next event.
func (n *NodeAllocations) sync(ctx context.Context, key cache.ObjectName) error {
	n.mu.Lock()
	pod, wanted := n.wanted(key)
	have := n.byPod[key]
	if !wanted {
		delete(n.byPod, key)
	}
	n.mu.Unlock()
	if !wanted || (have != nil && have.Spec.PodUID == pod.UID) {
		return nil
	}
	alloc, err := n.tessera.GpuV1alpha1().GPUAllocations(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	n.record(alloc)
	return nil
}

// wanted returns the pod key names and whether its allocation is kept: the
// pod is in the cache, has not ended and asks for the plugin's resource
// (any pod, without a resource name). The caller holds mu.
func (n *NodeAllocations) wanted(key cache.ObjectName) (*corev1.Pod, bool) {
	pod, err := n.pods.Pods(key.Namespace).Get(key.Name)
	if err != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil, false
	}
	return pod, n.resource == "" || len(asking(pod, n.resource)) > 0
}

// Wrote records the allocation as the plugin wrote it.
func (n *NodeAllocations) Wrote(alloc *gpuv1alpha1.GPUAllocation) { n.record(alloc) }

// record keeps the allocation when its pod is still wanted, unless the
// copy held is further along: an allocation's status only moves forward,
// and a read may answer after a later write.
func (n *NodeAllocations) record(alloc *gpuv1alpha1.GPUAllocation) {
	key := cache.MetaObjectToName(alloc)
	n.mu.Lock()
	defer n.mu.Unlock()
	pod, wanted := n.wanted(key)
	if !wanted || pod.UID != alloc.Spec.PodUID {
		return
	}
	if have := n.byPod[key]; have != nil && have.UID == alloc.UID && progress(have) > progress(alloc) {
		return
	}
	n.byPod[key] = alloc
}

// List returns the allocations held; they must not be changed.
func (n *NodeAllocations) List() []*gpuv1alpha1.GPUAllocation {
	n.mu.RLock()
	defer n.mu.RUnlock()
	out := make([]*gpuv1alpha1.GPUAllocation, 0, len(n.byPod))
	for _, a := range n.byPod {
		out = append(out, a)
	}
	return out
}

package harness

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
	gpulisters "github.com/tessera-gpu/tessera/generated/listers/gpu/v1alpha1"
)

// KubeletSim does what a node's kubelet and Tessera's device plugin do
// for a pod the extender bound: as soon as the pod is bound, its
// GPUAllocation becomes Allocated. On a node whose GPUNode says
// podIdentification InFlight, the scheduler lets one pod be in flight, so
// this loop's speed is the kubelet's in the benchmark: it writes as many
// allocations at once as kubeletWorkers, as a cluster's kubelets each
// write their own node's.
type KubeletSim struct {
	tessera     versioned.Interface
	pods        corelisters.PodLister
	allocations gpulisters.GPUAllocationLister
	queue       workqueue.TypedRateLimitingInterface[cache.ObjectName]
	Completed   atomic.Int64

	mu sync.Mutex
	// allocatedAt is when each allocation was marked Allocated, by name.
	allocatedAt map[string]time.Time
}

func newKubeletSim(tessera versioned.Interface, pods corelisters.PodLister, allocations gpulisters.GPUAllocationLister) *KubeletSim {
	return &KubeletSim{
		tessera:     tessera,
		pods:        pods,
		allocations: allocations,
		allocatedAt: map[string]time.Time{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](5*time.Millisecond, time.Second),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "kubelet-sim"}),
	}
}

// handler queues the pod or allocation whose change may let an allocation
// complete. A pod and its allocation have the same name.
func (k *KubeletSim) handler() cache.ResourceEventHandler {
	enqueue := func(obj any) {
		if name, err := cache.ObjectToName(obj); err == nil {
			k.queue.Add(name)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}
}

// run completes allocations with workers goroutines until ctx ends.
func (k *KubeletSim) run(ctx context.Context, workers int) {
	defer k.queue.ShutDown()
	for range workers {
		go wait.UntilWithContext(ctx, k.work, time.Second)
	}
	<-ctx.Done()
}

func (k *KubeletSim) work(ctx context.Context) {
	for {
		name, shutdown := k.queue.Get()
		if shutdown {
			return
		}
		if err := k.complete(ctx, name); err != nil {
			klog.FromContext(ctx).V(2).Info("Completing the allocation failed, retrying", "allocation", name, "err", err)
			k.queue.AddRateLimited(name)
		} else {
			k.queue.Forget(name)
		}
		k.queue.Done(name)
	}
}

// complete marks the allocation Allocated if its pod is bound to its node
// and it is still Pending.
func (k *KubeletSim) complete(ctx context.Context, name cache.ObjectName) error {
	alloc, err := k.allocations.GPUAllocations(name.Namespace).Get(name.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if alloc.Status.Phase != "" && alloc.Status.Phase != gpuv1alpha1.AllocationPending {
		return nil
	}
	pod, err := k.pods.Pods(name.Namespace).Get(name.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pod.UID != alloc.Spec.PodUID || pod.Spec.NodeName == "" {
		return nil
	}
	if pod.Spec.NodeName != alloc.Spec.NodeName {
		return fmt.Errorf("pod %s is bound to node %s but its allocation is for node %s", name, pod.Spec.NodeName, alloc.Spec.NodeName)
	}
	alloc = alloc.DeepCopy()
	alloc.Status = AllocatedStatus(alloc, metav1.Now())
	_, err = k.tessera.GpuV1alpha1().GPUAllocations(name.Namespace).UpdateStatus(ctx, alloc, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return fmt.Errorf("marking allocation %s Allocated: %w", name, err)
	}
	k.Completed.Add(1)
	k.mu.Lock()
	k.allocatedAt[name.Name] = time.Now()
	k.mu.Unlock()
	return nil
}

// Allocated returns when each allocation was marked Allocated, by name.
func (k *KubeletSim) Allocated() map[string]time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return maps.Clone(k.allocatedAt)
}

// AllocatedStatus is the status the device plugin writes once the kubelet
// has been served for every container of the allocation.
func AllocatedStatus(alloc *gpuv1alpha1.GPUAllocation, now metav1.Time) gpuv1alpha1.GPUAllocationStatus {
	served := make([]string, 0, len(alloc.Spec.Containers))
	for _, c := range alloc.Spec.Containers {
		served = append(served, c.Name)
	}
	return gpuv1alpha1.GPUAllocationStatus{
		Phase:            gpuv1alpha1.AllocationAllocated,
		ServedContainers: served,
		AllocatedTime:    &now,
	}
}

// podIsBound is a pod filter for the informer's handler.
func podIsBound(obj any) bool {
	pod, ok := obj.(*corev1.Pod)
	return ok && pod.Spec.NodeName != ""
}

// WatchForKubelet is, for a row whose scheduler writes GPUAllocations, the
// simulated kubelet fed by the bench's informers, which must not have
// started yet; nil for other rows. The caller runs it once they have.
func WatchForKubelet(row string, watches *Informers, tessera versioned.Interface) (*KubeletSim, error) {
	if !allocatesGPUs(row) {
		return nil, nil
	}
	pods := watches.Kube.Core().V1().Pods()
	allocations := watches.Tessera.Gpu().V1alpha1().GPUAllocations()
	kubelet := newKubeletSim(tessera, pods.Lister(), allocations.Lister())
	if _, err := allocations.Informer().AddEventHandler(kubelet.handler()); err != nil {
		return nil, err
	}
	if _, err := pods.Informer().AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: podIsBound, Handler: kubelet.handler(),
	}); err != nil {
		return nil, err
	}
	return kubelet, nil
}

// kubeletWorkers is how many allocations the simulated kubelet writes at
// once. In a cluster every node's device plugin writes its own, so a node
// whose pod was bound waits for no other node's write; with a few workers
// the bench's kubelet queued the writes of the whole cluster (at 5,000
// nodes under a backlog, with 8 workers, an allocation waited 18 s for
// its write at the median, and every bind on its node with it).
const kubeletWorkers = 256

// Start runs the simulated kubelet, if the row has one, until ctx ends;
// wg counts it.
func (k *KubeletSim) Start(ctx context.Context, wg *sync.WaitGroup) {
	if k == nil {
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		k.run(ctx, kubeletWorkers)
	}()
}

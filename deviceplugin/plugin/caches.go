package plugin

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/allocator"
	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
	"github.com/tessera-gpu/tessera/generated/informers/externalversions"
	gpulisters "github.com/tessera-gpu/tessera/generated/listers/gpu/v1alpha1"
)

// caches are the informers the plugin reads through.
type caches struct {
	kubeFactory  informers.SharedInformerFactory
	nodeFactory  externalversions.SharedInformerFactory
	pods         corelisters.PodLister
	allocations  *allocator.NodeAllocations
	gpuNodes     gpulisters.GPUNodeLister
	synced       []cache.InformerSynced
	gpuNodeEvent cache.SharedIndexInformer
	podsSynced   cache.InformerSynced
	running      sync.WaitGroup
}

// newCaches watches the node's pods and GPUNode only, and reads the
// GPUAllocations of its pods by name, so a plugin's memory and traffic do
// not grow with the cluster.
func (p *Plugin) newCaches() (*caches, error) {
	return watchNode(p.deps.Kube, p.deps.Tessera, p.cfg.NodeName, corev1.ResourceName(p.cfg.ResourceName))
}

// StartNodeWatches starts the watches the daemon of node keeps in
// device-plugin mode for pods that ask for resource, as newCaches does,
// and returns whether they have synced and how to stop them once ctx has
// ended. The benchmark opens them for every node, to count what a fleet of
// daemons costs the API server.
func StartNodeWatches(ctx context.Context, kube kubernetes.Interface, tessera versioned.Interface, node string, resource corev1.ResourceName) (synced []cache.InformerSynced, stop func(), err error) {
	c, err := watchNode(kube, tessera, node, resource)
	if err != nil {
		return nil, nil, err
	}
	c.startWatches(ctx)
	return c.synced, c.shutdown, nil
}

func watchNode(kube kubernetes.Interface, tessera versioned.Interface, node string, resource corev1.ResourceName) (*caches, error) {
	c := &caches{
		kubeFactory: informers.NewSharedInformerFactoryWithOptions(kube, 0,
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", node).String()
			})),
		nodeFactory: externalversions.NewSharedInformerFactoryWithOptions(tessera, 0,
			externalversions.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("metadata.name", node).String()
			})),
	}
	pods := c.kubeFactory.Core().V1().Pods()
	allocs, err := allocator.NewNodeAllocations(tessera, pods.Informer(), resource)
	if err != nil {
		return nil, err
	}
	gpuNodes := c.nodeFactory.Gpu().V1alpha1().GPUNodes()
	c.pods, c.allocations, c.gpuNodes = pods.Lister(), allocs, gpuNodes.Lister()
	c.podsSynced = pods.Informer().HasSynced
	c.gpuNodeEvent = gpuNodes.Informer()
	c.synced = []cache.InformerSynced{pods.Informer().HasSynced, gpuNodes.Informer().HasSynced, allocs.HasSynced}
	return c, nil
}

func (c *caches) start(ctx context.Context) error {
	c.startWatches(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("waiting for the pod and GPU caches to sync: %w", context.Cause(ctx))
	}
	return nil
}

// startWatches starts the informers, and the reading of the pods'
// allocations once the pods have synced.
func (c *caches) startWatches(ctx context.Context) {
	c.kubeFactory.Start(ctx.Done())
	c.nodeFactory.Start(ctx.Done())
	c.running.Add(1)
	go func() {
		defer c.running.Done()
		if cache.WaitForCacheSync(ctx.Done(), c.podsSynced) {
			c.allocations.Run(ctx)
		}
	}()
}

// shutdown waits for the caches to stop, once the context they started
// with has ended.
func (c *caches) shutdown() {
	c.kubeFactory.Shutdown()
	c.nodeFactory.Shutdown()
	c.running.Wait()
}

// onSpecChange calls f whenever the administrator changes the GPUNode spec.
func (c *caches) onSpecChange(f func()) error {
	_, err := c.gpuNodeEvent.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { f() },
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*gpuv1alpha1.GPUNode)
			n, ok2 := newObj.(*gpuv1alpha1.GPUNode)
			if ok1 && ok2 && !slices.Equal(o.Spec.CordonedDevices, n.Spec.CordonedDevices) {
				f()
			}
		},
	})
	return err
}

// onGPUNodeChange calls f whenever the node's GPUNode appears, changes or
// goes.
func (c *caches) onGPUNodeChange(f func()) error {
	_, err := c.gpuNodeEvent.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { f() },
		UpdateFunc: func(any, any) { f() },
		DeleteFunc: func(any) { f() },
	})
	return err
}

// cordoned returns the GPUs the administrator cordoned.
func (c *caches) cordoned(node string) func() []string {
	return func() []string {
		n, err := c.gpuNodes.Get(node)
		if err != nil {
			return nil
		}
		return n.Spec.CordonedDevices
	}
}

// NodePods lists the node's pods, for metrics.
func (c *caches) NodePods() ([]*corev1.Pod, error) {
	return c.pods.List(labels.Everything())
}

package scheduler

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/generated/informers/externalversions"
	"github.com/tessera-gpu/tessera/test/framework"
)

// serveDelay is how long the simulated kubelet takes by default to admit
// a pod, so that binds to one node really queue behind each other.
const serveDelay = 30 * time.Millisecond

// devicePlugin plays every node's device plugin: it marks each Pending
// allocation Allocated, and records whether a node ever had two pending
// allocations at once, which the one-in-flight rule forbids.
type devicePlugin struct {
	mu         sync.Mutex
	pending    map[string]map[string]bool // node -> allocation keys not yet served
	violations []string
	servedAt   map[string]time.Time // allocation key -> when it was marked Allocated
}

// startDevicePlugin starts the simulated device plugin, which waits delay
// before it serves each allocation.
func startDevicePlugin(t *testing.T, cp *framework.ControlPlane, delay time.Duration) *devicePlugin {
	ctx, cancel := context.WithCancel(context.Background())
	p := &devicePlugin{pending: map[string]map[string]bool{}, servedAt: map[string]time.Time{}}
	factory := externalversions.NewSharedInformerFactory(cp.Tessera, 0)
	informer := factory.Gpu().V1alpha1().GPUAllocations().Informer()
	work := make(chan *gpuv1alpha1.GPUAllocation, 1000)
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.seen(obj.(*gpuv1alpha1.GPUAllocation), work) },
		UpdateFunc: func(_, obj any) { p.seen(obj.(*gpuv1alpha1.GPUAllocation), work) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			a := obj.(*gpuv1alpha1.GPUAllocation)
			p.forget(a.Spec.NodeName, a.Namespace+"/"+a.Name)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case a := <-work:
				wg.Add(1)
				go func() {
					defer wg.Done()
					time.Sleep(delay)
					p.serve(ctx, t, cp, a)
				}()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		factory.Shutdown()
	})
	return p
}

func (p *devicePlugin) seen(a *gpuv1alpha1.GPUAllocation, work chan<- *gpuv1alpha1.GPUAllocation) {
	key := a.Namespace + "/" + a.Name
	if a.Status.Phase != "" && a.Status.Phase != gpuv1alpha1.AllocationPending {
		p.forget(a.Spec.NodeName, key)
		return
	}
	p.mu.Lock()
	node := p.pending[a.Spec.NodeName]
	if node == nil {
		node = map[string]bool{}
		p.pending[a.Spec.NodeName] = node
	}
	known := node[key]
	if !known {
		for other := range node {
			p.violations = append(p.violations, fmt.Sprintf("node %s: %s pending while %s still pending", a.Spec.NodeName, key, other))
		}
		node[key] = true
	}
	p.mu.Unlock()
	if !known {
		work <- a.DeepCopy()
	}
}

func (p *devicePlugin) forget(node, key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.pending[node], key)
}

// serve answers the kubelet for every container and marks the allocation
// Allocated, once the pod is bound to the allocation's node, as a kubelet
// would only then admit it. An allocation whose pod is never bound stays
// pending, as it would on a real node.
func (p *devicePlugin) serve(ctx context.Context, t *testing.T, cp *framework.ControlPlane, a *gpuv1alpha1.GPUAllocation) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		pod, err := cp.Kube.CoreV1().Pods(a.Namespace).Get(ctx, a.Name, metav1.GetOptions{})
		if err == nil && pod.UID == a.Spec.PodUID && pod.Spec.NodeName == a.Spec.NodeName {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil || (err == nil && pod.UID != a.Spec.PodUID) || apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	client := cp.Tessera.GpuV1alpha1().GPUAllocations(a.Namespace)
	for range 10 {
		cur, err := client.Get(ctx, a.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && cur.UID != a.UID) || ctx.Err() != nil {
			return
		}
		if err != nil {
			continue
		}
		framework.MarkServed(cur)
		if _, err = client.UpdateStatus(ctx, cur, metav1.UpdateOptions{FieldManager: "e2e-device-plugin"}); err == nil {
			p.mu.Lock()
			p.servedAt[a.Namespace+"/"+a.Name] = time.Now()
			p.mu.Unlock()
			return
		}
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			t.Logf("device plugin: marking %s/%s Allocated: %v", a.Namespace, a.Name, err)
		}
	}
}

// Violations returns every time a node had two pending allocations.
func (p *devicePlugin) Violations() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.violations...)
}

// ServedAt returns when the allocation was marked Allocated.
func (p *devicePlugin) ServedAt(namespace, name string) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.servedAt[namespace+"/"+name]
}

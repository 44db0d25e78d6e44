package dra

import (
	"context"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	"k8s.io/client-go/tools/cache"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/metrics"
	"github.com/tessera-gpu/tessera/deviceplugin/nodestatus"
)

// Claims follows what kube-scheduler allocated on the node's GPUs: the
// ResourceClaims whose allocation names the node's devices of the driver.
// It is the daemon's source of the node's DRA allocations for its GPUNode
// and metrics, as GPUAllocations are the extender's.
//
// ResourceClaims cannot be selected by node, so the informer lists and
// watches every claim of the cluster; its transform keeps of each only the
// allocation results on this node, so that the memory held stays with the
// node's own allocations.
type Claims struct {
	node    string
	devices Devices
	scaling nodestatus.Scaling
	factory informers.SharedInformerFactory
	lister  resourcelisters.ResourceClaimLister
	synced  cache.InformerSynced
	events  cache.SharedIndexInformer
}

// NewClaims returns the claims of the node's GPUs; nothing is read until
// Start.
func NewClaims(kube kubernetes.Interface, node string, devices Devices, scaling nodestatus.Scaling) *Claims {
	c := &Claims{node: node, devices: devices, scaling: scaling}
	c.factory = informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTransform(c.trim))
	claims := c.factory.Resource().V1().ResourceClaims()
	c.lister, c.events = claims.Lister(), claims.Informer()
	c.synced = c.events.HasSynced
	return c
}

// trim keeps of a claim only its name and this node's allocation results.
func (c *Claims) trim(obj any) (any, error) {
	claim, ok := obj.(*resourceapi.ResourceClaim)
	if !ok {
		// A tombstone, or a type the informer does not hold.
		if m, err := meta.Accessor(obj); err == nil {
			m.SetManagedFields(nil)
		}
		return obj, nil
	}
	out := &resourceapi.ResourceClaim{}
	out.Name, out.Namespace, out.UID, out.ResourceVersion = claim.Name, claim.Namespace, claim.UID, claim.ResourceVersion
	if a := claim.Status.Allocation; a != nil {
		var results []resourceapi.DeviceRequestAllocationResult
		for _, r := range a.Devices.Results {
			if r.Driver == gpuv1alpha1.DRADriverName && r.Pool == c.node {
				results = append(results, r)
			}
		}
		out.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}}
	}
	return out, nil
}

// Start starts the informer and waits until it has listed the claims.
func (c *Claims) Start(ctx context.Context) error {
	c.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		return fmt.Errorf("waiting for the ResourceClaim cache to sync: %w", context.Cause(ctx))
	}
	return nil
}

// Shutdown stops the informer once its context ended.
func (c *Claims) Shutdown() { c.factory.Shutdown() }

// OnChange calls f whenever a claim is added, changes or goes.
func (c *Claims) OnChange(f func()) error {
	_, err := c.events.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { f() },
		UpdateFunc: func(any, any) { f() },
		DeleteFunc: func(any) { f() },
	})
	return err
}

// ByUUID returns what the allocated claims consume of each of the node's
// GPUs, by UUID, as kube-scheduler counted it.
func (c *Claims) ByUUID() map[string]metrics.Usage {
	claims, err := c.lister.List(labels.Everything())
	if err != nil {
		return nil
	}
	byDevice := Allocated(claims)
	out := map[string]metrics.Usage{}
	for _, g := range c.devices.Devices() {
		if u, ok := byDevice[DeviceKey{Pool: c.node, Device: DeviceName(c.scaling.Device(g))}]; ok {
			out[g.UUID] = u
		}
	}
	return out
}

// MemoryMiB returns the memory in MiB the allocated claims hold of each of
// the node's GPUs, by UUID.
func (c *Claims) MemoryMiB() map[string]int64 {
	out := map[string]int64{}
	for uuid, u := range c.ByUUID() {
		out[uuid] = u.MemoryBytes / mebibyte
	}
	return out
}

package backlog

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	"k8s.io/client-go/tools/cache"

	gpulisters "github.com/tessera-gpu/tessera/generated/listers/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// backlogBinds tells the tracker of each pod bound, with the GPUs it got:
// from its GPUAllocation in extender and plugin mode, from its
// ResourceClaim's allocation in DRA mode (both named like the pod). A
// bind counts from when the bench's pod watch first saw the pod bound;
// its GPUs may be seen before or after.
type backlogBinds struct {
	tracker *backlogTracker
	// gpusOf returns a pod's node and holds, false while not known.
	gpusOf func(name string) (string, []placement.Hold, bool)

	mu sync.Mutex
	// boundAt is when each pod whose GPUs are not known yet was seen bound.
	boundAt map[string]time.Time
}

func newBacklogBinds(tracker *backlogTracker, gpusOf func(string) (string, []placement.Hold, bool)) *backlogBinds {
	return &backlogBinds{tracker: tracker, gpusOf: gpusOf, boundAt: map[string]time.Time{}}
}

// allocationGPUs reads a pod's GPUs from its GPUAllocation.
func allocationGPUs(allocations gpulisters.GPUAllocationLister) func(string) (string, []placement.Hold, bool) {
	return func(name string) (string, []placement.Hold, bool) {
		alloc, err := allocations.GPUAllocations(harness.Namespace).Get(name)
		if err != nil {
			return "", nil, false
		}
		return alloc.Spec.NodeName, placement.Holds(alloc.Spec.Containers), true
	}
}

// claimGPUs reads a pod's GPUs from its ResourceClaim's allocation on
// nodes of gpusPerNode GPUs.
func claimGPUs(claims resourcelisters.ResourceClaimLister, gpusPerNode int) func(string) (string, []placement.Hold, bool) {
	indexes := harness.DeviceIndexes(gpusPerNode)
	return func(name string) (string, []placement.Hold, bool) {
		claim, err := claims.ResourceClaims(harness.Namespace).Get(name)
		if err != nil {
			return "", nil, false
		}
		return harness.ClaimHolds(claim, indexes)
	}
}

// podHandler records pods seen bound.
func (b *backlogBinds) podHandler() cache.ResourceEventHandler {
	observe := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok || pod.Spec.NodeName == "" {
			return
		}
		now := time.Now()
		b.mu.Lock()
		if _, seen := b.boundAt[pod.Name]; !seen {
			b.boundAt[pod.Name] = now
		}
		b.mu.Unlock()
		b.resolve(pod.Name)
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: observe, UpdateFunc: func(_, obj any) { observe(obj) }}
}

// gpuHandler looks again at the pod of a GPUAllocation or claim that changed.
func (b *backlogBinds) gpuHandler() cache.ResourceEventHandler {
	observe := func(obj any) {
		if name, err := cache.ObjectToName(obj); err == nil {
			b.resolve(name.Name)
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: observe, UpdateFunc: func(_, obj any) { observe(obj) }}
}

// resolve tells the tracker of the pod's bind once its GPUs are known.
func (b *backlogBinds) resolve(name string) {
	b.mu.Lock()
	at, ok := b.boundAt[name]
	b.mu.Unlock()
	if !ok {
		return
	}
	node, holds, ok := b.gpusOf(name)
	if !ok {
		return
	}
	b.mu.Lock()
	_, pending := b.boundAt[name]
	delete(b.boundAt, name)
	b.mu.Unlock()
	if pending {
		b.tracker.bound(name, node, holds, at)
	}
}

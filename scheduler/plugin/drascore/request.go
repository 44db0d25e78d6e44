package drascore

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/resourceclaim"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// ClaimGetter reads claims, as kube-scheduler's claim tracker
// (fwk.SharedDRAManager's ResourceClaims) does.
type ClaimGetter interface {
	Get(namespace, name string) (*resourceapi.ResourceClaim, error)
	pendingAllocations
}

// pendingAllocations are the allocations DynamicResources made in Reserve
// and writes in PreBind, by claim, as kube-scheduler's claim tracker keeps
// them: until written they are in no claim's status.
type pendingAllocations interface {
	GetPendingAllocation(claimUID types.UID) *resourceapi.AllocationResult
}

// allocation is the claim's allocation, written or pending; nil when it
// has none.
func allocation(claim *resourceapi.ResourceClaim, pending pendingAllocations) *resourceapi.AllocationResult {
	if claim.Status.Allocation != nil {
		return claim.Status.Allocation
	}
	return pending.GetPendingAllocation(claim.UID)
}

// UnallocatedRequests calls fn for each device request of the pod's
// claims that are not yet allocated nor being allocated. A claim already
// allocated (shared with a pod placed before) adds nothing: its use is in
// the node's usage.
func UnallocatedRequests(pod *v1.Pod, claims ClaimGetter, fn func(claim *resourceapi.ResourceClaim, r *resourceapi.DeviceRequest)) error {
	for i := range pod.Spec.ResourceClaims {
		name, _, err := resourceclaim.Name(pod, &pod.Spec.ResourceClaims[i])
		if err != nil {
			return err
		}
		if name == nil {
			continue
		}
		claim, err := claims.Get(pod.Namespace, *name)
		if err != nil {
			return fmt.Errorf("reading claim %s/%s: %w", pod.Namespace, *name, err)
		}
		if allocation(claim, claims) != nil {
			continue
		}
		for j := range claim.Spec.Devices.Requests {
			fn(claim, &claim.Spec.Devices.Requests[j])
		}
	}
	return nil
}

// RequestChoices returns the container requests a device request of the
// claim may become, if it is of one of classes, in its order of
// preference: one for an exact request, one per subrequest of those
// classes for a firstAvailable list. Requests for all of a node's devices
// become none.
func RequestChoices(claim *resourceapi.ResourceClaim, r *resourceapi.DeviceRequest, classes []string) []gpurequest.ContainerRequest {
	var choices []gpurequest.ContainerRequest
	if e := r.Exactly; e != nil {
		if c, ok := containerRequest(claim.Name+"/"+r.Name, e.DeviceClassName, e.AllocationMode, e.Count, e.Capacity, classes); ok {
			choices = append(choices, c)
		}
	}
	for _, s := range r.FirstAvailable {
		if c, ok := containerRequest(claim.Name+"/"+r.Name+"/"+s.Name, s.DeviceClassName, s.AllocationMode, s.Count, s.Capacity, classes); ok {
			choices = append(choices, c)
		}
	}
	return choices
}

// claimRequests returns, for each request of the pod's unallocated claims
// (see UnallocatedRequests) that is of one of classes, the container
// requests it may become (see RequestChoices).
func claimRequests(pod *v1.Pod, claims ClaimGetter, classes []string) ([][]gpurequest.ContainerRequest, error) {
	var out [][]gpurequest.ContainerRequest
	err := UnallocatedRequests(pod, claims, func(claim *resourceapi.ResourceClaim, r *resourceapi.DeviceRequest) {
		if choices := RequestChoices(claim, r, classes); len(choices) > 0 {
			out = append(out, choices)
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// containerRequest is one device request of a claim as placement sees a
// container: count GPUs, each with the memory (all of the GPU's when none
// is named, as the memory capacity's request policy says) and the cores
// the request names. A claim is held for the pod's whole life, so every
// request is long-running. ok is false for a request of another class, or
// one for all of a node's devices.
func containerRequest(name, class string, mode resourceapi.DeviceAllocationMode, count int64, capacity *resourceapi.CapacityRequirements, classes []string) (gpurequest.ContainerRequest, bool) {
	if !slices.Contains(classes, class) || mode == resourceapi.DeviceAllocationModeAll {
		return gpurequest.ContainerRequest{}, false
	}
	c := gpurequest.ContainerRequest{Name: name, Kind: gpuv1alpha1.ContainerApp, Count: 1}
	if count > 0 {
		c.Count = int32(min(count, gpurequest.MaxCount))
	}
	if capacity != nil {
		if q, ok := capacityOf(capacity.Requests, gpuv1alpha1.DRACapacityMemory); ok {
			c.MemoryMiB = min(mebibytes(q), gpurequest.MaxMemoryMiB)
		}
		if q, ok := capacityOf(capacity.Requests, gpuv1alpha1.DRACapacityCores); ok {
			c.Cores = int32(min(max(q.Value(), 0), gpurequest.MaxPercent))
		}
	}
	return c, true
}

// capacityOf returns the quantity of capacity name in m, which may be
// written with or without the driver's domain.
func capacityOf(m map[resourceapi.QualifiedName]resource.Quantity, name resourceapi.QualifiedName) (resource.Quantity, bool) {
	if q, ok := m[name]; ok {
		return q, true
	}
	q, ok := m[resourceapi.QualifiedName(gpuv1alpha1.DRADriverName+"/")+name]
	return q, ok
}

// mebibytes is q bytes in MiB, rounded up, as the capacity's 1 MiB steps
// round a request.
func mebibytes(q resource.Quantity) int64 {
	return (max(q.Value(), 0) + 1<<20 - 1) >> 20
}

// candidates are the pod's requests to try on a node, best first: the k-th
// takes each claim request's k-th choice, or its last when it has fewer,
// so the first that fits stands for what kube-scheduler's allocator,
// which takes each firstAvailable list's first subrequest that it can,
// would allocate.
func candidates(choices [][]gpurequest.ContainerRequest) [][]gpurequest.ContainerRequest {
	n := 0
	for _, c := range choices {
		n = max(n, len(c))
	}
	out := make([][]gpurequest.ContainerRequest, n)
	for k := range out {
		for _, c := range choices {
			out[k] = append(out[k], c[min(k, len(c)-1)])
		}
	}
	return out
}

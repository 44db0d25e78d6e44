package plugin

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/plugin/drascore"
)

// draRequest reads the pod's unallocated claims of classes as one
// placement request that asks no more than kube-scheduler's allocator
// would give them, so that whenever the allocator could place the claims
// on a node, the request fits that node's GPUs as draFeed holds them.
// Each claim request becomes one container: the least count, memory and
// cores of its choices (a firstAvailable list's subrequests), at most 99
// cores (placement would take 100 to ask for the GPU alone, which the
// allocator does not: with draFeed's extra core per GPU, 99 fit where the
// allocator's 100 would), and one GPU when the claim does not keep its
// devices distinct (the allocator may then put every share on one GPU). CEL
// selectors, constraints and the pod's GPU annotations are left out: a
// request that fits fewer GPUs than they allow could hold a pod that
// fits. ok is false for a pod without such claims, one whose claims are
// not all there yet, or one placement cannot take.
func draRequest(pod *v1.Pod, claims drascore.ClaimGetter, classes []string) (req *placement.Request, ok bool) {
	var containers []gpurequest.ContainerRequest
	err := drascore.UnallocatedRequests(pod, claims, func(claim *resourceapi.ResourceClaim, r *resourceapi.DeviceRequest) {
		choices := drascore.RequestChoices(claim, r, classes)
		if len(choices) == 0 {
			return
		}
		c := least(choices)
		c.Cores = min(c.Cores, gpurequest.MaxPercent-1)
		if c.Count > 1 && !distinct(claim, r.Name) {
			c.Count = 1
		}
		containers = append(containers, c)
	})
	if err != nil || len(containers) == 0 {
		return nil, false
	}
	req, err = placement.NewRequest(containers, gpurequest.Selection{}, gpurequest.Spread)
	return req, err == nil
}

// least is a container request that asks no more of a GPU than any of
// choices: the least count, cores and memory, where a whole GPU's memory (none
// named) counts as the least memory only when every choice asks for it,
// since a whole small GPU may fit where a part of a large one does not.
func least(choices []gpurequest.ContainerRequest) gpurequest.ContainerRequest {
	c := choices[0]
	for _, o := range choices[1:] {
		c.Count = min(c.Count, o.Count)
		c.Cores = min(c.Cores, o.Cores)
		switch {
		case c.MemoryMiB == 0 && o.MemoryMiB == 0:
		case c.MemoryMiB == 0 || o.MemoryMiB == 0:
			c.MemoryMiB = 1
		default:
			c.MemoryMiB = min(c.MemoryMiB, o.MemoryMiB)
		}
	}
	return c
}

// distinct reports whether the claim keeps the devices of the request
// named on distinct GPUs, by their UUIDs.
func distinct(claim *resourceapi.ResourceClaim, request string) bool {
	uuid := resourceapi.FullyQualifiedName(gpuv1alpha1.DRADriverName + "/" + string(gpuv1alpha1.DRAAttributeUUID))
	for _, c := range claim.Spec.Devices.Constraints {
		if c.DistinctAttribute != nil && *c.DistinctAttribute == uuid && (len(c.Requests) == 0 || slices.Contains(c.Requests, request)) {
			return true
		}
	}
	return false
}

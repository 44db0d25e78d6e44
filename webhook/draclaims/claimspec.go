package draclaims

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// claimRequest is the name of the one request of every claim the webhook
// writes.
const claimRequest = "gpu"

// claimSpec returns the claim a container's request becomes: one request
// of the webhook's DeviceClass for the container's count of GPUs, each
// with the request's memory and cores as consumable capacity, the pod's
// type, UUID and MIG annotations as CEL selectors, no MIG instance for
// more than one GPU, and constraints that keep the GPUs distinct (and on
// one NUMA node when asked). A memory percentage or exclusive use depends
// on the GPU: such a request lists one subrequest per kind of GPU the
// cluster has, kube-scheduler taking the first that fits. So does a
// request in MIG mode where GPUs make their instances on demand (see
// withMIGMadeOnDemand). errs names each field DRA cannot express, and its
// limit; path is the count's path in the pod.
func (t *Translator) claimSpec(r gpurequest.ContainerRequest, annotations map[string]string, sel gpurequest.Selection, countPath *field.Path) (resourceapi.ResourceClaimSpec, field.ErrorList) {
	var errs field.ErrorList
	if r.Count > resourceapi.AllocationResultsMaxSize {
		errs = append(errs, field.Invalid(countPath, r.Count, fmt.Sprintf(
			"must be at most %d in DRA mode: a ResourceClaim holds at most %d devices", resourceapi.AllocationResultsMaxSize, resourceapi.AllocationResultsMaxSize)))
	}
	dynamic := t.madeOnDemand()
	filters, serrs := celSelectors(annotations, sel, dynamic)
	errs = append(errs, serrs...)
	selectors := append(slices.Clone(filters), modeSelector(sel, dynamic)...)
	if r.Count > 1 {
		// A container gets at most one MIG instance, as placement rules
		// (CUDA uses one per process); a pod limited to MIG instances
		// that asks for more was refused before.
		selectors = append(selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: "!(" + isMIG() + ")"}})
	}
	exact := resourceapi.ExactDeviceRequest{
		DeviceClassName: t.deviceClass,
		AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
		Count:           int64(r.Count),
		Selectors:       selectors,
	}
	request := resourceapi.DeviceRequest{Name: claimRequest}
	exclusive := r.Cores == gpurequest.MaxPercent
	if r.MemoryPercent > 0 || exclusive {
		subs, serr := subrequests(r, exact, t.gpuSizes(), exclusive, countPath)
		if serr != nil {
			errs = append(errs, serr)
		}
		request.FirstAvailable = subs
	} else {
		exact.Capacity = capacity(r.MemoryMiB, r.Cores, 0)
		request.Exactly = &exact
	}
	if sel.Mode == gpurequest.ModeMIG && len(sel.MIGProfiles) == 0 {
		request = t.withMIGMadeOnDemand(r, request, filters)
	}
	spec := resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{request}}}
	if r.Count > 1 {
		// Without it kube-scheduler may hand out two shares of one GPU.
		spec.Devices.Constraints = append(spec.Devices.Constraints, resourceapi.DeviceConstraint{
			Requests: []string{claimRequest}, DistinctAttribute: ptr.To(qualified(gpuv1alpha1.DRAAttributeUUID)),
		})
		if sel.NUMABind {
			spec.Devices.Constraints = append(spec.Devices.Constraints, resourceapi.DeviceConstraint{
				Requests: []string{claimRequest}, MatchAttribute: ptr.To(qualified(gpuv1alpha1.DRAAttributeNUMANode)),
			})
		}
	}
	return spec, errs
}

// subrequests lists one subrequest per kind of GPU, each selecting GPUs of
// that kind and asking for what the request takes of one.
func subrequests(r gpurequest.ContainerRequest, exact resourceapi.ExactDeviceRequest, sizes []gpuSize, exclusive bool, countPath *field.Path) ([]resourceapi.DeviceSubRequest, *field.Error) {
	what := "exclusive use (" + strconv.Itoa(gpurequest.MaxPercent) + " cores)"
	if r.MemoryPercent > 0 {
		what = "a memory percentage"
	}
	// Only what the request depends on tells kinds apart.
	var kinds []gpuSize
	for _, s := range sizes {
		if r.MemoryPercent == 0 {
			s.memoryMiB = 0
		}
		if !exclusive {
			s.cores, s.shareLimit = 0, 0
		}
		if !slices.Contains(kinds, s) {
			kinds = append(kinds, s)
		}
	}
	slices.SortFunc(kinds, func(x, y gpuSize) int {
		if x.memoryMiB != y.memoryMiB {
			return int(x.memoryMiB - y.memoryMiB)
		}
		if x.cores != y.cores {
			return int(x.cores - y.cores)
		}
		return int(x.shareLimit - y.shareLimit)
	})
	switch {
	case len(kinds) == 0:
		return nil, field.Forbidden(countPath, fmt.Sprintf(
			"in DRA mode %s depends on the GPU, and no DRA node reports its GPUs yet: create the pod again once a node daemon in DRA mode publishes its GPUNode", what))
	case len(kinds) > resourceapi.FirstAvailableDeviceRequestMaxSize:
		return nil, field.Forbidden(countPath, fmt.Sprintf(
			"in DRA mode %s becomes one subrequest per kind of GPU, at most %d, and the cluster has %d kinds; ask for memory in MiB (%s) or for fewer cores",
			what, resourceapi.FirstAvailableDeviceRequestMaxSize, len(kinds), "nvidia.com/gpumem"))
	}
	subs := make([]resourceapi.DeviceSubRequest, 0, len(kinds))
	for i, k := range kinds {
		memory, cores, shares := r.MemoryMiB, r.Cores, int32(0)
		var match []string
		if r.MemoryPercent > 0 {
			memory = max(k.memoryMiB*int64(r.MemoryPercent)/100, 1)
			match = append(match, capacityIs(gpuv1alpha1.DRACapacityMemory, strconv.FormatInt(k.memoryMiB, 10)+"Mi"))
		}
		if exclusive {
			cores, shares = k.cores, k.shareLimit
			match = append(match, capacityIs(gpuv1alpha1.DRACapacityCores, strconv.Itoa(int(k.cores))),
				capacityIs(gpuv1alpha1.DRACapacityShares, strconv.Itoa(int(k.shareLimit))))
		}
		selectors := slices.Clone(exact.Selectors)
		selectors = append(selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: strings.Join(match, " && ")}})
		subs = append(subs, resourceapi.DeviceSubRequest{
			Name:            "size-" + strconv.Itoa(i),
			DeviceClassName: exact.DeviceClassName,
			AllocationMode:  exact.AllocationMode,
			Count:           exact.Count,
			Selectors:       selectors,
			Capacity:        capacity(memory, cores, shares),
		})
	}
	return subs, nil
}

// capacity is what one GPU of the request consumes; a capacity left out
// takes the device's default (all of the memory, no cores, one share).
func capacity(memoryMiB int64, cores, shares int32) *resourceapi.CapacityRequirements {
	requests := map[resourceapi.QualifiedName]resource.Quantity{}
	if memoryMiB > 0 {
		requests[gpuv1alpha1.DRACapacityMemory] = *resource.NewQuantity(memoryMiB<<20, resource.BinarySI)
	}
	if cores > 0 {
		requests[gpuv1alpha1.DRACapacityCores] = *resource.NewQuantity(int64(cores), resource.DecimalSI)
	}
	if shares > 0 {
		requests[gpuv1alpha1.DRACapacityShares] = *resource.NewQuantity(int64(shares), resource.DecimalSI)
	}
	if len(requests) == 0 {
		return nil
	}
	return &resourceapi.CapacityRequirements{Requests: requests}
}

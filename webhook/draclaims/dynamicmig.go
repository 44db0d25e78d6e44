package draclaims

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// migPick is the profile of the MIG instance a request gets on one kind
// of GPU whose instances are made on demand.
type migPick struct {
	profile        string
	memoryMiB      int64
	computePercent int32
}

// madeOnDemand reports whether a GPU of the DRA nodes makes its MIG
// instances on demand.
func (t *Translator) madeOnDemand() bool {
	return slices.ContainsFunc(t.draGPUs(), func(d gpuv1alpha1.GPUDevice) bool { return d.MIGGeometry != nil })
}

// migPicks returns, for each kind of GPU of the DRA nodes whose instances
// are made on demand, the profile r gets there as placement chooses it
// (gpurequest.ContainerRequest.MIGProfile): the smallest that holds its
// memory and cores. They are ordered as placement orders profiles,
// smallest memory first, then least compute.
func (t *Translator) migPicks(r gpurequest.ContainerRequest) []migPick {
	var out []migPick
	for _, d := range t.draGPUs() {
		if d.MIGGeometry == nil {
			continue
		}
		i := r.MIGProfile(d.MemoryMiB, d.MIGGeometry.Profiles)
		if i < 0 {
			continue
		}
		p := d.MIGGeometry.Profiles[i]
		pick := migPick{profile: p.Name, memoryMiB: p.MemoryMiB, computePercent: p.ComputePercent}
		if !slices.Contains(out, pick) {
			out = append(out, pick)
		}
	}
	slices.SortFunc(out, func(a, b migPick) int {
		return cmp.Or(cmp.Compare(a.memoryMiB, b.memoryMiB), cmp.Compare(a.computePercent, b.computePercent), cmp.Compare(a.profile, b.profile))
	})
	return out
}

// withMIGMadeOnDemand returns the request of a container of a pod in MIG
// mode with, first, one subrequest per profile it gets on the cluster's
// GPUs whose instances are made on demand, selecting the instances of
// that profile (filters are the pod's type and UUID selectors); the
// instances the administrator laid out stay its last choices.
// kube-scheduler's allocator takes the first subrequest that it can
// allocate, and of its devices, listed in the order placement tries
// them, the first whose memory slices are free: the instance placement
// chooses. A cluster without such GPUs leaves the request as it is.
func (t *Translator) withMIGMadeOnDemand(r gpurequest.ContainerRequest, request resourceapi.DeviceRequest, filters []resourceapi.DeviceSelector) resourceapi.DeviceRequest {
	picks := t.migPicks(r)
	if len(picks) == 0 {
		return request
	}
	laidOut := request.FirstAvailable
	if e := request.Exactly; e != nil {
		laidOut = []resourceapi.DeviceSubRequest{{Name: "laid-out", DeviceClassName: e.DeviceClassName, AllocationMode: e.AllocationMode,
			Count: e.Count, Selectors: e.Selectors, Capacity: e.Capacity}}
	}
	subs := make([]resourceapi.DeviceSubRequest, 0, len(picks)+len(laidOut))
	for i, p := range picks {
		selector := fmt.Sprintf("%s && %s == %q && %s && %s", isMadeOnDemand(), attribute(gpuv1alpha1.DRAAttributeMIGProfile), p.profile,
			capacityIs(gpuv1alpha1.DRACapacityMemory, strconv.FormatInt(p.memoryMiB, 10)+"Mi"),
			capacityIs(gpuv1alpha1.DRACapacityCores, strconv.Itoa(int(p.computePercent))))
		subs = append(subs, resourceapi.DeviceSubRequest{
			Name:            "mig-" + strconv.Itoa(i),
			DeviceClassName: t.deviceClass,
			AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
			Count:           1,
			Selectors:       append(slices.Clone(filters), resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: selector}}),
			// What the container asks for, which the profile holds: it
			// tells TesseraDRA the request, and takes nothing more.
			Capacity: capacity(r.MemoryMiB, r.Cores, 0),
		})
	}
	subs = append(subs, laidOut...)
	return resourceapi.DeviceRequest{Name: request.Name, FirstAvailable: subs[:min(len(subs), resourceapi.FirstAvailableDeviceRequestMaxSize)]}
}

package dra

import (
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// A GPU whose MIG instances are made on demand is published as
// partitionable devices, so that kube-scheduler's allocator places its
// instances by the rules of placement: one device per profile and
// placement, each consuming its GPU's counters: the profile's memory and
// compute, one of the GPU's shares, and one counter per memory slice it
// takes. Two instances allocated at once never overlap, and the GPU
// holds no more than its share limit. The devices are listed GPU by GPU,
// profile by profile, each profile's placements in the order placement
// tries them, and the allocator takes the first that fits: a claim that
// selects one profile gets the first free run of slices on the first GPU
// with room, where placement puts it.

// Counters of a GPU whose instances are made on demand.
const (
	counterMemory = "memory"
	counterCores  = "cores"
	counterShares = "shares"
)

// counterSlice names the counter of one memory slice.
func counterSlice(k int) string { return "slice-" + strconv.Itoa(k) }

// addSlices adds a counter of one for each memory slice at takes.
func addSlices(counters map[string]resourceapi.Counter, at gpuv1alpha1.MIGPlacement) {
	for k := at.Start; k < at.Start+at.Size; k++ {
		counters[counterSlice(int(k))] = resourceapi.Counter{Value: *resource.NewQuantity(1, resource.DecimalSI)}
	}
}

// migPartition is one instance a GPU whose instances are made on demand
// may be cut into.
type migPartition struct {
	name    string
	gpu     gpuv1alpha1.GPUDevice
	profile gpuv1alpha1.MIGProfile
	at      gpuv1alpha1.MIGPlacement
}

// allocation is the instance as an allocation records it.
func (p *migPartition) allocation() *gpuv1alpha1.MIGAllocation {
	return &gpuv1alpha1.MIGAllocation{Profile: p.profile.Name, ProfileID: p.profile.ProfileID, Placement: p.at}
}

// migPartitions lists the instances g may be cut into, in the order
// placement tries them; a placement out of the API's bounds is left out,
// as placement never chooses it.
func migPartitions(g gpuv1alpha1.GPUDevice) []migPartition {
	var out []migPartition
	for _, p := range g.MIGGeometry.Profiles {
		for _, at := range p.Placements {
			if at.Slices() == ^uint16(0) {
				continue
			}
			out = append(out, migPartition{name: partitionName(g, p, at), gpu: g, profile: p, at: at})
		}
	}
	return out
}

// partitionName is a device name of the instance: gpu-<index>-<profile,
// with what a DNS label does not allow as dashes>-at-<first slice>.
func partitionName(g gpuv1alpha1.GPUDevice, p gpuv1alpha1.MIGProfile, at gpuv1alpha1.MIGPlacement) string {
	profile := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, p.Name)
	return "gpu-" + strconv.Itoa(int(g.Index)) + "-" + profile + "-at-" + strconv.Itoa(int(at.Start))
}

// counterSetName names the counters of GPU g.
func counterSetName(g gpuv1alpha1.GPUDevice) string { return "gpu-" + strconv.Itoa(int(g.Index)) }

// counterSet is what g's instances share: its memory, compute and shares
// as placement holds them, and each memory slice its profiles take.
func counterSet(g gpuv1alpha1.GPUDevice) resourceapi.CounterSet {
	counters := map[string]resourceapi.Counter{
		counterMemory: {Value: *resource.NewQuantity(g.MemoryMiB*mebibyte, resource.BinarySI)},
		counterCores:  {Value: *resource.NewQuantity(int64(g.Cores), resource.DecimalSI)},
		counterShares: {Value: *resource.NewQuantity(int64(g.ShareLimit), resource.DecimalSI)},
	}
	for _, p := range migPartitions(g) {
		addSlices(counters, p.at)
	}
	return resourceapi.CounterSet{Name: counterSetName(g), Counters: counters}
}

// partitionDevice is the published form of one instance.
func partitionDevice(p migPartition) resourceapi.Device {
	memory := *resource.NewQuantity(p.profile.MemoryMiB*mebibyte, resource.BinarySI)
	cores := *resource.NewQuantity(int64(p.profile.ComputePercent), resource.DecimalSI)
	counters := map[string]resourceapi.Counter{
		counterMemory: {Value: memory},
		counterCores:  {Value: cores},
		counterShares: {Value: *resource.NewQuantity(1, resource.DecimalSI)},
	}
	addSlices(counters, p.at)
	return resourceapi.Device{
		Name: p.name,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			gpuv1alpha1.DRAAttributeUUID:       {StringValue: ptr.To(p.gpu.UUID)},
			gpuv1alpha1.DRAAttributeIndex:      {IntValue: ptr.To(int64(p.gpu.Index))},
			gpuv1alpha1.DRAAttributeModel:      {StringValue: ptr.To(p.gpu.Model)},
			gpuv1alpha1.DRAAttributeNUMANode:   {IntValue: ptr.To(int64(p.gpu.NUMANode))},
			gpuv1alpha1.DRAAttributeMIGProfile: {StringValue: ptr.To(p.profile.Name)},
			gpuv1alpha1.DRAAttributeParentUUID: {StringValue: ptr.To(p.gpu.UUID)},
			gpuv1alpha1.DRAAttributeMIGStart:   {IntValue: ptr.To(int64(p.at.Start))},
			gpuv1alpha1.DRAAttributeMIGSize:    {IntValue: ptr.To(int64(p.at.Size))},
		},
		// Whole, as a laid-out instance: to one container, which its one
		// share says to those that read the capacities (TesseraDRA, quota).
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			gpuv1alpha1.DRACapacityMemory: {Value: memory},
			gpuv1alpha1.DRACapacityCores:  {Value: cores},
			gpuv1alpha1.DRACapacityShares: {Value: *resource.NewQuantity(1, resource.DecimalSI)},
		},
		ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: counterSetName(p.gpu), Counters: counters}},
	}
}

// migSlices are the slices of the GPUs whose instances are made on
// demand, within the API's limits: their counter sets first, then their
// instances in order.
func migSlices(gpus []gpuv1alpha1.GPUDevice) []resourceslice.Slice {
	var out []resourceslice.Slice
	for i := 0; i < len(gpus); i += resourceapi.ResourceSliceMaxCounterSets {
		s := resourceslice.Slice{}
		for _, g := range gpus[i:min(i+resourceapi.ResourceSliceMaxCounterSets, len(gpus))] {
			s.SharedCounters = append(s.SharedCounters, counterSet(g))
		}
		out = append(out, s)
	}
	var devices []resourceapi.Device
	for _, g := range gpus {
		for _, p := range migPartitions(g) {
			devices = append(devices, partitionDevice(p))
		}
	}
	for i := 0; i < len(devices); i += resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures {
		out = append(out, resourceslice.Slice{Devices: devices[i:min(i+resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures, len(devices))]})
	}
	return out
}

package dra

import (
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/nodestatus"
)

// mebibyte is the step of memory requests: HAMi-core limits are in MiB.
const mebibyte = 1 << 20

// Resources returns what the node offers kube-scheduler: one pool named
// after the node with one device per GPU that is healthy and not cordoned,
// in its first slice. A GPU whose MIG instances are made on demand is
// published in the slices after it, as one device per instance it may be
// cut into (see migSlices). A GPU that turns unhealthy or is cordoned is
// withdrawn, so that no new claim gets it; claims already allocated keep
// it.
func Resources(node string, devices []gpu.Device, cordoned []string, scaling nodestatus.Scaling) resourceslice.DriverResources {
	var (
		out     []resourceapi.Device
		dynamic []gpuv1alpha1.GPUDevice
	)
	for _, d := range devices {
		if !d.Health.Healthy || slices.Contains(cordoned, d.UUID) {
			continue
		}
		g := scaling.Device(d)
		if g.MIGGeometry != nil {
			dynamic = append(dynamic, g)
			continue
		}
		out = append(out, Device(g))
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		node: {Slices: append([]resourceslice.Slice{{Devices: out}}, migSlices(dynamic)...)},
	}}
}

// Device returns the published form of a GPU: shareable, with its memory,
// cores and share limit as consumable capacity. A MIG instance is handed
// out whole, as placement hands it out: any request for its memory or
// cores takes all of them, and its share limit is one.
//
// A request that names no amount takes a whole GPU's memory and sets no
// compute limit, the same as a HAMi pod asking for a GPU alone: the GPU is
// then its own. Every allocation takes one of the GPU's shares unless it
// asks for more (all of them: exclusive), so at most the split count of
// tenants share a GPU, as in device-plugin mode.
func Device(g gpuv1alpha1.GPUDevice) resourceapi.Device {
	memory := g.MemoryMiB * mebibyte
	leastMemory, leastCores := int64(mebibyte), int64(0)
	if g.MIG != nil {
		leastMemory, leastCores = memory, int64(g.Cores)
	}
	dev := resourceapi.Device{
		Name:                     DeviceName(g),
		AllowMultipleAllocations: ptr.To(true),
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			gpuv1alpha1.DRAAttributeUUID:     {StringValue: ptr.To(g.UUID)},
			gpuv1alpha1.DRAAttributeIndex:    {IntValue: ptr.To(int64(g.Index))},
			gpuv1alpha1.DRAAttributeModel:    {StringValue: ptr.To(g.Model)},
			gpuv1alpha1.DRAAttributeNUMANode: {IntValue: ptr.To(int64(g.NUMANode))},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			gpuv1alpha1.DRACapacityMemory: capacity(memory, memory, leastMemory, mebibyte, resource.BinarySI),
			gpuv1alpha1.DRACapacityCores:  capacity(int64(g.Cores), leastCores, leastCores, 1, resource.DecimalSI),
			gpuv1alpha1.DRACapacityShares: capacity(int64(g.ShareLimit), 1, 1, 1, resource.DecimalSI),
		},
	}
	if g.MIG != nil {
		dev.Attributes[gpuv1alpha1.DRAAttributeMIGProfile] = resourceapi.DeviceAttribute{StringValue: ptr.To(g.MIG.Profile)}
		dev.Attributes[gpuv1alpha1.DRAAttributeParentUUID] = resourceapi.DeviceAttribute{StringValue: ptr.To(g.MIG.ParentUUID)}
	}
	return dev
}

// capacity is a capacity of value whose requests lie in [lowest, value] in
// steps of step, and take def when they name no amount.
func capacity(value, def, lowest, step int64, format resource.Format) resourceapi.DeviceCapacity {
	policy := &resourceapi.CapacityRequestPolicy{
		Default: resource.NewQuantity(def, format),
		ValidRange: &resourceapi.CapacityRequestPolicyRange{
			Min: resource.NewQuantity(lowest, format),
			Max: resource.NewQuantity(value, format),
		},
	}
	// The API wants room for one step above the minimum.
	if lowest+step <= value {
		policy.ValidRange.Step = resource.NewQuantity(step, format)
	}
	return resourceapi.DeviceCapacity{Value: *resource.NewQuantity(value, format), RequestPolicy: policy}
}

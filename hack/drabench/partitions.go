package drabench

import (
	"fmt"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// attributePartition is the fraction of its GPU a partition is, "1/2".
const attributePartition resourceapi.QualifiedName = "partition"

// devicesPerSlice is how many devices a slice holds when they consume
// counters (resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures).
const devicesPerSlice = resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures

// partitionsModel publishes each GPU as partitionable devices
// (DRAPartitionableDevices, KEP-4815, beta since v1.36): a counter set per
// GPU holding its memory and cores, and one device per fixed fraction of
// it, each consuming its fraction of both. A device is never shared; the
// counters keep the partitions allocated on a GPU within it. The pod asks
// for the smallest fraction that holds 8 GiB and 30 cores, a half, by a
// CEL selector on its attribute.
func partitionsModel() model {
	half := partitionName(2)
	return model{
		name:   "partitions",
		slices: partitionSlices(),
		claim: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpu",
			Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: gpuv1alpha1.DRADriverName,
				AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
				Count:           1,
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
					Expression: fmt.Sprintf("device.attributes[%q].%s == %q", gpuv1alpha1.DRADriverName, attributePartition, half),
				}}},
			},
		}}}},
		eligible: func(d resourceapi.Device) bool {
			a, ok := d.Attributes[attributePartition]
			return ok && a.StringValue != nil && *a.StringValue == half
		},
	}
}

func partitionName(parts int) string { return "1/" + strconv.Itoa(parts) }

// partitionSlices returns a node's slices in the partitions model: one
// with the GPUs' counter sets (a slice holds devices or counters, not
// both), then the devices, as many slices as the limit per slice needs.
// The nodes' devices share their capacities and counter consumption,
// which the allocator only reads, so that 5,000 nodes' worth fit in
// memory.
func partitionSlices() func(node string) []*resourceapi.ResourceSlice {
	var (
		counters []resourceapi.CounterSet
		shared   []resourceapi.Device
	)
	memory := int64(gpuMemoryMiB) << 20
	for g := range gpusPerNode {
		set := "gpu-" + strconv.Itoa(g)
		counters = append(counters, resourceapi.CounterSet{Name: set, Counters: map[string]resourceapi.Counter{
			"memory": {Value: *resource.NewQuantity(memory, resource.BinarySI)},
			"cores":  {Value: *resource.NewQuantity(100, resource.DecimalSI)},
		}})
		// Each GPU is offered whole, in halves, quarters and eighths.
		for _, parts := range []int{1, 2, 4, 8} {
			for i := range parts {
				// gpu-0-4-3 is GPU 0's fourth quarter.
				name := set
				if parts > 1 {
					name += "-" + strconv.Itoa(parts) + "-" + strconv.Itoa(i)
				}
				mem := resource.NewQuantity(memory/int64(parts), resource.BinarySI)
				// An eighth of 100 cores is 12.5.
				cores := resource.NewMilliQuantity(100_000/int64(parts), resource.DecimalSI)
				shared = append(shared, resourceapi.Device{
					Name: name,
					Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
						attributePartition: {StringValue: ptr.To(partitionName(parts))},
					},
					Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
						gpuv1alpha1.DRACapacityMemory: {Value: *mem},
						gpuv1alpha1.DRACapacityCores:  {Value: *cores},
					},
					ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: map[string]resourceapi.Counter{
						"memory": {Value: *mem},
						"cores":  {Value: *cores},
					}}},
				})
			}
		}
	}
	perGPU := len(shared) / gpusPerNode
	return func(node string) []*resourceapi.ResourceSlice {
		gpus := nodeGPUs(node)
		devices := make([]resourceapi.Device, len(shared))
		for i, d := range shared {
			g := gpus[i/perGPU]
			d.Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				gpuv1alpha1.DRAAttributeUUID:     {StringValue: ptr.To(g.UUID)},
				gpuv1alpha1.DRAAttributeIndex:    {IntValue: ptr.To(int64(g.Index))},
				gpuv1alpha1.DRAAttributeModel:    {StringValue: ptr.To(g.Model)},
				gpuv1alpha1.DRAAttributeNUMANode: {IntValue: ptr.To(int64(g.NUMANode))},
				attributePartition:               d.Attributes[attributePartition],
			}
			devices[i] = d
		}
		pool := resourceslice.Pool{Slices: []resourceslice.Slice{{SharedCounters: counters}}}
		for len(devices) > 0 {
			n := min(len(devices), devicesPerSlice)
			pool.Slices = append(pool.Slices, resourceslice.Slice{Devices: devices[:n]})
			devices = devices[n:]
		}
		return resourceSlices(node, resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{node: pool}})
	}
}

package drascore

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/test/fixtures"
)

// dynamicMIGSlices are the ResourceSlices Tessera's driver publishes for
// node with one A100 80GB whose MIG instances are made on demand: the
// GPU's counters, then one device per instance it may be cut into.
func dynamicMIGSlices(node string) []*resourceapi.ResourceSlice {
	quantity := func(v int64) resourceapi.Counter {
		return resourceapi.Counter{Value: *resource.NewQuantity(v, resource.DecimalSI)}
	}
	counters := resourceapi.CounterSet{Name: "gpu-0", Counters: map[string]resourceapi.Counter{
		"memory": quantity(81920 << 20), "cores": quantity(100), "shares": quantity(7)}}
	var devices []resourceapi.Device
	for _, p := range fixtures.A100MIGGeometry().Profiles {
		for _, at := range p.Placements {
			consumed := map[string]resourceapi.Counter{"memory": quantity(p.MemoryMiB << 20), "cores": quantity(int64(p.ComputePercent)), "shares": quantity(1)}
			for k := at.Start; k < at.Start+at.Size; k++ {
				counters.Counters[fmt.Sprint("slice-", k)] = quantity(1)
				consumed[fmt.Sprint("slice-", k)] = quantity(1)
			}
			devices = append(devices, resourceapi.Device{
				Name: fmt.Sprintf("gpu-0-%s-at-%d", strings.ReplaceAll(p.Name, ".", "-"), at.Start),
				Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
					gpuv1alpha1.DRAAttributeUUID:       {StringValue: ptr.To(node + "-gpu-0")},
					gpuv1alpha1.DRAAttributeIndex:      {IntValue: ptr.To(int64(0))},
					gpuv1alpha1.DRAAttributeModel:      {StringValue: ptr.To("NVIDIA A100-SXM4-80GB")},
					gpuv1alpha1.DRAAttributeMIGProfile: {StringValue: ptr.To(p.Name)},
					gpuv1alpha1.DRAAttributeMIGStart:   {IntValue: ptr.To(int64(at.Start))},
					gpuv1alpha1.DRAAttributeMIGSize:    {IntValue: ptr.To(int64(at.Size))},
				},
				Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
					gpuv1alpha1.DRACapacityMemory: {Value: *resource.NewQuantity(p.MemoryMiB<<20, resource.BinarySI)},
					gpuv1alpha1.DRACapacityCores:  {Value: *resource.NewQuantity(int64(p.ComputePercent), resource.DecimalSI)},
					gpuv1alpha1.DRACapacityShares: {Value: *resource.NewQuantity(1, resource.DecimalSI)},
				},
				ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0", Counters: consumed}},
			})
		}
	}
	spec := func() resourceapi.ResourceSliceSpec {
		return resourceapi.ResourceSliceSpec{Driver: gpuv1alpha1.DRADriverName, NodeName: ptr.To(node),
			Pool: resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 2}}
	}
	counterSlice := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-slice-0", ResourceVersion: "1"}, Spec: spec()}
	counterSlice.Spec.SharedCounters = []resourceapi.CounterSet{counters}
	deviceSlice := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-slice-1", ResourceVersion: "1"}, Spec: spec()}
	deviceSlice.Spec.Devices = devices
	return []*resourceapi.ResourceSlice{counterSlice, deviceSlice}
}

// TestGPUsThatMakeMIGInstancesAreSeenWhole reads a GPU whose instances
// are made on demand from its instances and counters as placement sees it
// in the other modes: its geometry, its capacity, and as used the slices,
// memory, compute and shares of the instances the claims hold.
func TestGPUsThatMakeMIGInstancesAreSeenWhole(t *testing.T) {
	var c sliceGPUs
	list := c.nodeSlices(dynamicMIGSlices("a"), nil)["a"]
	allocated := sets.New(structured.MakeDeviceID(gpuv1alpha1.DRADriverName, "a", "gpu-0-1g-10gb-at-0"),
		structured.MakeDeviceID(gpuv1alpha1.DRADriverName, "a", "gpu-0-3g-40gb-at-4"))
	var n placement.Node
	gpuNode(&n, "a", list, nil, allocated)
	if len(n.Devices) != 1 {
		t.Fatalf("node a has the GPUs %+v, want one", n.Devices)
	}
	d := n.Devices[0]
	want := fixtures.A100MIGGeometry()
	for i := range want.Profiles {
		want.Profiles[i].ProfileID = 0 // NVML's ID is the daemon's alone
	}
	if !reflect.DeepEqual(d.MIG, want) {
		t.Errorf("the GPU's geometry is %+v, want %+v", d.MIG, want)
	}
	d.MIG = nil
	wantGPU := placement.Device{UUID: "a-gpu-0", Model: "NVIDIA A100-SXM4-80GB", NUMANode: -1, MemoryMiB: 81920, Cores: 100, ShareLimit: 7, Healthy: true,
		UsedSlices: 0b11110001, UsedMemoryMiB: 9856 + 40192, UsedCores: 14 + 43, UsedShares: 2}
	if d != wantGPU {
		t.Errorf("the GPU is %+v, want %+v", d, wantGPU)
	}
}

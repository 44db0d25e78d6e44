package drascore

import (
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// slice is the ResourceSlice Tessera's driver publishes for node at
// generation, with one GPU of memoryGiB per entry, named gpu-<i>.
func slice(node string, generation int64, memoryGiB ...int64) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-slice", ResourceVersion: fmt.Sprint(generation)},
		Spec: resourceapi.ResourceSliceSpec{
			Driver: gpuv1alpha1.DRADriverName, NodeName: ptr.To(node),
			Pool: resourceapi.ResourcePool{Name: node, Generation: generation, ResourceSliceCount: 1},
		},
	}
	for i, gib := range memoryGiB {
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{
			Name: deviceName(i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				gpuv1alpha1.DRAAttributeUUID:     {StringValue: ptr.To(node + "-" + deviceName(i))},
				gpuv1alpha1.DRAAttributeIndex:    {IntValue: ptr.To(int64(i))},
				gpuv1alpha1.DRAAttributeModel:    {StringValue: ptr.To("NVIDIA L4")},
				gpuv1alpha1.DRAAttributeNUMANode: {IntValue: ptr.To(int64(0))},
			},
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
				gpuv1alpha1.DRACapacityMemory: {Value: *resource.NewQuantity(gib<<30, resource.BinarySI)},
				gpuv1alpha1.DRACapacityCores:  {Value: resource.MustParse("100")},
				gpuv1alpha1.DRACapacityShares: {Value: resource.MustParse("10")},
			},
		})
	}
	return s
}

func deviceName(i int) string { return "gpu-" + string(rune('0'+i)) }

// used is what the allocated claims consume on one GPU of node.
func used(node string, device int, memory, cores, shares string) (structured.DeviceID, structured.ConsumedCapacity) {
	c := structured.ConsumedCapacity{}
	for name, q := range map[resourceapi.QualifiedName]string{gpuv1alpha1.DRACapacityMemory: memory, gpuv1alpha1.DRACapacityCores: cores, gpuv1alpha1.DRACapacityShares: shares} {
		c[name] = ptr.To(resource.MustParse(q))
	}
	return structured.MakeDeviceID(gpuv1alpha1.DRADriverName, node, deviceName(device)), c
}

// gpuNodes is each node's GPUs as Score sees them.
func gpuNodes(c *sliceGPUs, slices []*resourceapi.ResourceSlice, consumed structured.ConsumedCapacityCollection, names map[string]bool) map[string]*placement.Node {
	out := map[string]*placement.Node{}
	for name, list := range c.nodeSlices(slices, names) {
		n := &placement.Node{}
		gpuNode(n, name, list, consumed, nil)
		out[name] = n
	}
	return out
}

func TestGPUNodes(t *testing.T) {
	other := slice("a", 1, 16)
	other.Spec.Driver = "nic.example.com"
	slices := []*resourceapi.ResourceSlice{
		slice("a", 1, 80, 80), // outdated generation
		slice("a", 2, 24, 24),
		other,
		slice("b", 1, 16),
		slice("not-a-candidate", 1, 16),
	}
	consumed := structured.ConsumedCapacityCollection{}
	id, held := used("a", 1, "1000Mi", "30", "2")
	consumed[id] = held
	var c sliceGPUs
	nodes := gpuNodes(&c, slices, consumed, map[string]bool{"a": true, "b": true, "c": true})

	if len(nodes) != 2 || nodes["a"] == nil || nodes["b"] == nil {
		t.Fatalf("got nodes %v, want a and b", nodes)
	}
	want := placement.Device{UUID: "a-gpu-1", Index: 1, Model: "NVIDIA L4", NUMANode: 0, MemoryMiB: 24576, Cores: 100, ShareLimit: 10, Healthy: true,
		UsedMemoryMiB: 1000, UsedCores: 30, UsedShares: 2}
	if a := nodes["a"].Devices; len(a) != 2 || a[1] != want || a[0].UsedMemoryMiB != 0 {
		t.Errorf("node a's GPUs are %+v, want the newest generation's two, the second %+v", a, want)
	}
	if b := nodes["b"].Devices; len(b) != 1 || b[0].MemoryMiB != 16384 {
		t.Errorf("node b's GPUs are %+v, want one of 16384 MiB", b)
	}

	// The next pod sees the claims' new use, and a slice's new version.
	delete(consumed, id)
	id, held = used("b", 0, "2Gi", "0", "1")
	consumed[id] = held
	slices[3] = slice("b", 1, 48)
	slices[3].ResourceVersion = "2"
	nodes = gpuNodes(&c, slices, consumed, map[string]bool{"a": true, "b": true})
	if a := nodes["a"].Devices; len(a) != 2 || a[1].UsedMemoryMiB != 0 || a[1].UsedShares != 0 {
		t.Errorf("node a's GPUs are %+v after their claim went, want them free", a)
	}
	if b := nodes["b"].Devices; len(b) != 1 || b[0].MemoryMiB != 49152 || b[0].UsedMemoryMiB != 2048 {
		t.Errorf("node b's GPUs are %+v, want the new slice's 49152 MiB with 2048 used", b)
	}
}

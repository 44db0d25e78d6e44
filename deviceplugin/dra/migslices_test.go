package dra

import (
	"fmt"
	"slices"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/nodestatus"
	"github.com/tessera-gpu/tessera/test/fixtures"
)

// TestGPUsThatMakeMIGInstancesArePartitionable publishes a GPU of its
// own and five whose instances are made on demand: the GPU in the first
// slice as before; then the five GPUs' counters (memory, compute, shares
// and each memory slice); then one device per instance they may be cut
// into, GPU by GPU, profile by profile, placement by placement, at most
// 64 to a slice, each consuming its GPU's counters.
func TestGPUsThatMakeMIGInstancesArePartitionable(t *testing.T) {
	devices := []gpu.Device{{UUID: "GPU-whole", Index: 0, Model: "NVIDIA H100", MemoryMiB: 81920, Health: gpu.Healthy()}}
	for i := 1; i <= 5; i++ {
		devices = append(devices, gpu.Device{UUID: fmt.Sprintf("GPU-mig-%d", i), Index: i, Model: "NVIDIA A100-SXM4-80GB",
			MemoryMiB: 81920, Health: gpu.Healthy(), MIGGeometry: fixtures.A100MIGGeometry()})
	}
	res := Resources(testNode, devices, nil, nodestatus.Scaling{SplitCount: 7, MemoryScaling: 1, CoreScaling: 1})
	got := res.Pools[testNode].Slices
	if len(got) != 4 {
		t.Fatalf("%d slices, want the whole GPU's, the counters', and two of instances (65 > 64)", len(got))
	}
	if len(got[0].Devices) != 1 || got[0].Devices[0].Name != "gpu-0" {
		t.Errorf("first slice %+v, want gpu-0 alone", got[0].Devices)
	}
	if sets := got[1].SharedCounters; len(sets) != 5 || sets[0].Name != "gpu-1" || len(sets[0].Counters) != 3+8 {
		t.Errorf("counter sets %+v, want one per GPU, with memory, cores, shares and 8 slices", sets)
	} else if q := sets[0].Counters[counterShares].Value; q.Value() != 7 {
		t.Errorf("GPU gpu-1 has %s shares, want its split count, 7", q.String())
	}
	if len(got[2].Devices) != resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures || len(got[3].Devices) != 1 {
		t.Fatalf("slices of %d and %d instances, want 64 and 1", len(got[2].Devices), len(got[3].Devices))
	}
	var names []string
	for _, d := range got[2].Devices[:13] {
		names = append(names, d.Name)
	}
	want := []string{"gpu-1-1g-10gb-at-0", "gpu-1-1g-10gb-at-1", "gpu-1-1g-10gb-at-2", "gpu-1-1g-10gb-at-3", "gpu-1-1g-10gb-at-4", "gpu-1-1g-10gb-at-5",
		"gpu-1-1g-10gb-at-6", "gpu-1-2g-20gb-at-0", "gpu-1-2g-20gb-at-2", "gpu-1-2g-20gb-at-4", "gpu-1-3g-40gb-at-0", "gpu-1-3g-40gb-at-4", "gpu-1-7g-80gb-at-0"}
	if !slices.Equal(names, want) {
		t.Errorf("GPU gpu-1's instances %v, want %v", names, want)
	}
	big := got[2].Devices[11] // 3g.40gb at slice 4
	consumed := big.ConsumesCounters[0]
	last := consumed.Counters[counterSlice(7)].Value
	if consumed.CounterSet != "gpu-1" || len(consumed.Counters) != 3+4 || last.Value() != 1 {
		t.Errorf("gpu-1-3g-40gb-at-4 consumes %+v, want gpu-1's memory, cores, a share and slices 4-7", consumed)
	}
	if a := big.Attributes; *a[gpuv1alpha1.DRAAttributeMIGProfile].StringValue != "3g.40gb" || *a[gpuv1alpha1.DRAAttributeMIGStart].IntValue != 4 ||
		*a[gpuv1alpha1.DRAAttributeUUID].StringValue != "GPU-mig-1" || big.AllowMultipleAllocations != nil {
		t.Errorf("gpu-1-3g-40gb-at-4 is %+v, want a 3g.40gb instance at slice 4 of GPU-mig-1, never shared", big)
	}
}

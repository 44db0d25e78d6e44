package dra

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/nodestatus"
)

func TestResourcesOfferHealthyUncordonedGPUs(t *testing.T) {
	scaling := nodestatus.Scaling{SplitCount: 4, MemoryScaling: 1, CoreScaling: 1}
	tests := []struct {
		name     string
		cordoned []string
		want     []string
	}{
		{name: "an unhealthy GPU is withdrawn", want: []string{"gpu-0", "gpu-1"}},
		{name: "a cordoned GPU is withdrawn", cordoned: []string{"GPU-a"}, want: []string{"gpu-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Resources(testNode, testGPUs(), tt.cordoned, scaling)
			pool, ok := res.Pools[testNode]
			if !ok || len(pool.Slices) != 1 {
				t.Fatalf("pools %+v, want one slice in pool %s", res.Pools, testNode)
			}
			var got []string
			for _, d := range pool.Slices[0].Devices {
				got = append(got, d.Name)
			}
			if len(got) != len(tt.want) || (len(got) > 0 && got[0] != tt.want[0]) {
				t.Errorf("devices %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDeviceCapacities(t *testing.T) {
	d := Device(nodestatus.Scaling{SplitCount: 4, MemoryScaling: 1, CoreScaling: 1}.Device(testGPUs()[1]))
	if d.AllowMultipleAllocations == nil || !*d.AllowMultipleAllocations {
		t.Error("the GPU is not shareable")
	}
	if got := *d.Attributes[gpuv1alpha1.DRAAttributeUUID].StringValue; got != "GPU-b" {
		t.Errorf("uuid %s", got)
	}
	if got := *d.Attributes[gpuv1alpha1.DRAAttributeNUMANode].IntValue; got != 1 {
		t.Errorf("NUMA node %d", got)
	}
	tests := []struct {
		name                        resourceapi.QualifiedName
		value, def, lowest, highest int64
	}{
		// A request naming no memory takes the whole GPU's.
		{name: gpuv1alpha1.DRACapacityMemory, value: 81920 << 20, def: 81920 << 20, lowest: 1 << 20, highest: 81920 << 20},
		// ... and sets no compute limit.
		{name: gpuv1alpha1.DRACapacityCores, value: 100, def: 0, lowest: 0, highest: 100},
		// Each allocation takes one of the split count's shares.
		{name: gpuv1alpha1.DRACapacityShares, value: 4, def: 1, lowest: 1, highest: 4},
	}
	for _, tt := range tests {
		c, ok := d.Capacity[tt.name]
		if !ok || c.RequestPolicy == nil || c.RequestPolicy.ValidRange == nil {
			t.Fatalf("capacity %s = %+v, want one with a valid range", tt.name, c)
		}
		p := c.RequestPolicy
		if c.Value.Value() != tt.value || p.Default.Value() != tt.def || p.ValidRange.Min.Value() != tt.lowest || p.ValidRange.Max.Value() != tt.highest {
			t.Errorf("capacity %s: value %s default %s range %s..%s, want %d, %d, %d..%d", tt.name,
				&c.Value, p.Default, p.ValidRange.Min, p.ValidRange.Max, tt.value, tt.def, tt.lowest, tt.highest)
		}
	}
}

// TestMIGInstancesAreDevicesOfTheirOwnNeverShared pins that a MIG-mode
// GPU's instances, which share its index, are distinct devices, each
// taken whole, memory and cores, by one allocation.
func TestMIGInstancesAreDevicesOfTheirOwnNeverShared(t *testing.T) {
	scaling := nodestatus.Scaling{SplitCount: 4, MemoryScaling: 2, CoreScaling: 1}
	devices := []gpu.Device{
		{UUID: "MIG-a", Index: 0, Model: "A100 MIG 1g.10gb", MemoryMiB: 9856, Health: gpu.Healthy(), MIG: &gpu.MIG{ParentUUID: "GPU-p", Profile: "1g.10gb", GPUInstanceID: 9}},
		{UUID: "MIG-b", Index: 0, Model: "A100 MIG 1g.10gb", MemoryMiB: 9856, Health: gpu.Healthy(), MIG: &gpu.MIG{ParentUUID: "GPU-p", Profile: "1g.10gb", GPUInstanceID: 10}},
	}
	res := Resources(testNode, devices, nil, scaling)
	got := res.Pools[testNode].Slices[0].Devices
	if len(got) != 2 || got[0].Name != "gpu-0-mig-9-0" || got[1].Name != "gpu-0-mig-10-0" {
		t.Fatalf("devices %+v, want one per MIG instance", got)
	}
	d := got[0]
	if shares := d.Capacity[gpuv1alpha1.DRACapacityShares].Value; shares.Value() != 1 {
		t.Errorf("shares %v, want 1: a MIG instance is never shared", shares.String())
	}
	if mem := d.Capacity[gpuv1alpha1.DRACapacityMemory].Value; mem.Value() != 9856*mebibyte {
		t.Errorf("memory %v, want the instance's, unscaled", mem.String())
	}
	if p := d.Attributes[gpuv1alpha1.DRAAttributeMIGProfile].StringValue; p == nil || *p != "1g.10gb" {
		t.Errorf("profile attribute %v", p)
	}
	// Whatever a claim asks of its memory or cores, it takes all of them,
	// as placement hands an instance out: never split by memory limits.
	for name, c := range d.Capacity {
		policy := c.RequestPolicy
		if policy == nil || policy.ValidRange == nil || policy.ValidRange.Min.Cmp(c.Value) != 0 || policy.Default.Cmp(c.Value) != 0 {
			t.Errorf("%s: value %s, request policy %+v; want any request to take all of it", name, c.Value.String(), policy)
		}
	}
}

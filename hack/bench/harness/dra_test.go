package harness

import (
	"reflect"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/dra"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

func TestResourceClaim(t *testing.T) {
	tests := []struct {
		name         string
		shape        Shape
		wantMemory   string
		wantCores    string
		wantDistinct bool
	}{
		{name: "a memory slice asks for its bytes", shape: Shape{Count: 1, MemoryMiB: 8192}, wantMemory: "8Gi"},
		{name: "memory and cores", shape: Shape{Count: 1, MemoryMiB: 20480, Cores: 30}, wantMemory: "20Gi", wantCores: "30"},
		{name: "a whole GPU names no capacity and takes the defaults", shape: Shape{Count: 1}},
		{name: "several GPUs must be distinct", shape: Shape{Count: 4, MemoryMiB: 16384}, wantMemory: "16Gi", wantDistinct: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claim := ResourceClaim("p", tt.shape)
			if claim.Name != "p" || claim.Namespace != Namespace || len(claim.Spec.Devices.Requests) != 1 {
				t.Fatalf("claim %s/%s with %d requests", claim.Namespace, claim.Name, len(claim.Spec.Devices.Requests))
			}
			exact := claim.Spec.Devices.Requests[0].Exactly
			if exact == nil || exact.DeviceClassName != gpuv1alpha1.DRADriverName || exact.Count != tt.shape.Count || exact.AllocationMode != resourceapi.DeviceAllocationModeExactCount {
				t.Fatalf("request %+v, want %d of class %s", exact, tt.shape.Count, gpuv1alpha1.DRADriverName)
			}
			requests := map[resourceapi.QualifiedName]string{}
			if exact.Capacity != nil {
				for k, v := range exact.Capacity.Requests {
					requests[k] = v.String()
				}
			}
			if requests[gpuv1alpha1.DRACapacityMemory] != tt.wantMemory || requests[gpuv1alpha1.DRACapacityCores] != tt.wantCores || len(requests) != countSet(tt.wantMemory, tt.wantCores) {
				t.Errorf("capacity requests %v, want memory %q cores %q", requests, tt.wantMemory, tt.wantCores)
			}
			distinct := len(claim.Spec.Devices.Constraints) == 1 && claim.Spec.Devices.Constraints[0].DistinctAttribute != nil &&
				string(*claim.Spec.Devices.Constraints[0].DistinctAttribute) == gpuv1alpha1.DRADriverName+"/"+string(gpuv1alpha1.DRAAttributeUUID)
			if distinct != tt.wantDistinct || (!tt.wantDistinct && len(claim.Spec.Devices.Constraints) > 0) {
				t.Errorf("constraints %+v, want distinct UUIDs %v", claim.Spec.Devices.Constraints, tt.wantDistinct)
			}
		})
	}
}

func countSet(values ...string) int {
	n := 0
	for _, v := range values {
		if v != "" {
			n++
		}
	}
	return n
}

func TestResourceSliceIsTheDaemons(t *testing.T) {
	status := GPUNodeStatus("n1", 8, 10, metav1.Now())
	slice := ResourceSlice("n1", status.Devices)
	if slice.Spec.Driver != gpuv1alpha1.DRADriverName || slice.Spec.NodeName == nil || *slice.Spec.NodeName != "n1" ||
		slice.Spec.Pool.Name != "n1" || slice.Spec.Pool.ResourceSliceCount != 1 {
		t.Fatalf("slice spec %+v", slice.Spec)
	}
	if len(slice.Spec.Devices) != 8 {
		t.Fatalf("%d devices, want one per GPU", len(slice.Spec.Devices))
	}
	for i, d := range slice.Spec.Devices {
		want := dra.Device(status.Devices[i])
		memory, shares := d.Capacity[gpuv1alpha1.DRACapacityMemory].Value, d.Capacity[gpuv1alpha1.DRACapacityShares].Value
		if d.Name != want.Name || !*d.AllowMultipleAllocations || memory.Value() != GPUMemoryMiB<<20 || shares.Value() != 10 {
			t.Errorf("device %d: %+v", i, d)
		}
	}
}

func TestNewPodUsesItsClaim(t *testing.T) {
	pod := NewPod("p", "tessera-scheduler", Shape{Count: 1, MemoryMiB: 1024}, FormClaim)
	if len(pod.Spec.ResourceClaims) != 1 || *pod.Spec.ResourceClaims[0].ResourceClaimName != "p" {
		t.Fatalf("pod claims %+v, want its own claim p", pod.Spec.ResourceClaims)
	}
	c := pod.Spec.Containers[0]
	if len(c.Resources.Claims) != 1 || c.Resources.Claims[0].Name != pod.Spec.ResourceClaims[0].Name || len(c.Resources.Limits) != 0 {
		t.Errorf("container resources %+v, want the claim and no extended resources", c.Resources)
	}
}

// TestClaimAllocationHolds checks that what the bench writes into a
// filled pod's claim reads back as the holds Tessera counts for the same
// devices.
func TestClaimAllocationHolds(t *testing.T) {
	devices := []gpuv1alpha1.DeviceAllocation{
		{UUID: GPUUUID("n1", 2), Index: 2, MemoryMiB: 16384, Cores: 50},
		{UUID: GPUUUID("n1", 5), Index: 5, MemoryMiB: GPUMemoryMiB},
	}
	claim := ResourceClaim("p", Shape{Count: 2, MemoryMiB: 16384, Cores: 50})
	claim.Status.Allocation = ClaimAllocation("n1", devices)
	node, holds, ok := ClaimHolds(claim, DeviceIndexes(8))
	want := placement.Holds([]gpuv1alpha1.ContainerAllocation{{Name: "cuda", Kind: gpuv1alpha1.ContainerApp, Devices: devices}})
	if !ok || node != "n1" || !reflect.DeepEqual(holds, want) {
		t.Errorf("claimHolds = %q, %+v, %v; want n1, %+v", node, holds, ok, want)
	}
	if _, _, ok := ClaimHolds(ResourceClaim("q", Shape{Count: 1}), DeviceIndexes(8)); ok {
		t.Error("an unallocated claim has holds")
	}
}

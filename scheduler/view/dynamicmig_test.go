package view

import (
	"reflect"
	"testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// TestDynamicMIGRoomFromAllocations pins that the room on a GPU that
// makes MIG instances on demand is rebuilt from API state alone, as
// after a scheduler restart: the allocations' instances hold their
// slices, before and after the GPUNode changes, so that the next pod's
// instance goes where none lies, and a freed instance's slices are free
// again.
func TestDynamicMIGRoomFromAllocations(t *testing.T) {
	gn := gpuNode("n1", 1)
	gn.Status.Devices[0].ShareLimit = 7
	gn.Status.Devices[0].MIGGeometry = &gpuv1alpha1.MIGGeometry{Profiles: []gpuv1alpha1.MIGProfile{
		{Name: "1g.10gb", ProfileID: 19, MemoryMiB: 9856, ComputePercent: 14, Placements: []gpuv1alpha1.MIGPlacement{
			{Start: 0, Size: 1}, {Start: 1, Size: 1}, {Start: 2, Size: 1}, {Start: 3, Size: 1}}},
	}}
	instance := func(start int32) []gpuv1alpha1.ContainerAllocation {
		c := containers(9856, 14, "n1-gpu0")
		c[0].Devices[0].MIG = &gpuv1alpha1.MIGAllocation{Profile: "1g.10gb", ProfileID: 19, Placement: gpuv1alpha1.MIGPlacement{Start: start, Size: 1}}
		return c
	}
	v := New()
	// Allocations may be seen before their GPUNode after a restart.
	v.Place(allocation("a", "a-uid", "pod-a", "n1", instance(0)))
	v.Place(allocation("c", "c-uid", "pod-c", "n1", instance(2)))
	v.SetGPUNode(gn)
	req := &placement.Request{
		Containers: []gpurequest.ContainerRequest{{Name: "main", Kind: gpuv1alpha1.ContainerApp, Count: 1, MemoryMiB: 8000}},
		Selection:  gpurequest.Selection{Mode: gpurequest.ModeMIG},
		GPUPolicy:  gpurequest.Spread,
	}
	nextStart := func() int32 {
		t.Helper()
		var got []gpuv1alpha1.ContainerAllocation
		var failure *placement.Failure
		v.Read([]string{"n1"}, "", func(_ string, n *Node) { got, failure = placement.Fit(&n.Placement, req) })
		if failure != nil {
			t.Fatalf("Fit() failed: %v", failure)
		}
		return got[0].Devices[0].MIG.Placement.Start
	}
	if got := nextStart(); got != 1 {
		t.Errorf("next instance at slice %d, want 1", got)
	}
	gn2 := gn.DeepCopy()
	gn2.Spec.CordonedDevices = []string{"other"}
	v.SetGPUNode(gn2)
	if got := nextStart(); got != 1 {
		t.Errorf("after a GPUNode update, next instance at slice %d, want 1", got)
	}
	v.Release("pod-a")
	if got := nextStart(); got != 0 {
		t.Errorf("after the first pod ended, next instance at slice %d, want 0", got)
	}
	var slices uint16
	v.Read([]string{"n1"}, "", func(_ string, n *Node) { slices = n.Placement.Devices[0].UsedSlices })
	if want := uint16(0b100); !reflect.DeepEqual(slices, want) {
		t.Errorf("held slices %b, want %b", slices, want)
	}
}

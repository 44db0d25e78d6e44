package backlog

import (
	"testing"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// TestFillLeavesNoRoom checks that the fill stops only when no shape of
// the mix fits any node, by Tessera's placement core, and over-commits no GPU.
func TestFillLeavesNoRoom(t *testing.T) {
	v, err := newBacklogView(20, 8, 10, harness.DefaultMix())
	if err != nil {
		t.Fatal(err)
	}
	filled := v.fill()
	if len(filled) == 0 {
		t.Fatal("nothing filled")
	}
	for s := range v.waiting {
		v.waiting[s] = 1
	}
	for _, name := range v.names {
		if v.fitsWaiting(name) {
			t.Errorf("node %s still fits a shape after the fill", name)
		}
		for _, d := range v.nodes[name].Devices {
			if d.UsedMemoryMiB > d.MemoryMiB || d.UsedCores > d.Cores || d.UsedShares > d.ShareLimit {
				t.Errorf("node %s GPU %s over-committed: %+v", name, d.UUID, d)
			}
		}
	}
}

func TestBacklogViewFitsOnlyWaitingShapes(t *testing.T) {
	v, err := newBacklogView(1, 4, 10, harness.DefaultMix())
	if err != nil {
		t.Fatal(err)
	}
	node := harness.NodeName(0)
	whole := v.shapeIndex("1 whole GPU")
	if v.fitsWaiting(node) {
		t.Fatal("an empty node fits when nothing waits")
	}
	v.waiting[whole] = 1
	if !v.fitsWaiting(node) {
		t.Fatal("an empty node does not fit a waiting whole GPU")
	}
	// Every GPU holds a small slice: no whole GPU is left.
	var holds []placement.Hold
	for g := range 4 {
		holds = append(holds, placement.Hold{UUID: harness.GPUUUID(node, g), MemoryMiB: 8192, Shares: 1})
	}
	v.hold(node, holds)
	if v.fitsWaiting(node) {
		t.Fatal("a whole GPU fits on GPUs that all hold a slice")
	}
	room := v.freedRoom(node, holds[:1])
	if r := room[harness.GPUUUID(node, 0)]; r.memoryMiB != 8192 || r.cores != 0 {
		t.Errorf("freed room of an 8 GiB slice: %+v", r)
	}
	v.release(node, holds[:1])
	if !v.fitsWaiting(node) {
		t.Fatal("the freed GPU does not fit a whole GPU")
	}
	if last := v.bound(whole); !last || v.fitsWaiting(node) {
		t.Fatal("the last waiting pod bound, yet something still fits")
	}
}

func TestFreedRoomOfAWholeGPU(t *testing.T) {
	v, err := newBacklogView(1, 4, 10, harness.DefaultMix())
	if err != nil {
		t.Fatal(err)
	}
	node := harness.NodeName(0)
	room := v.freedRoom(node, []placement.Hold{{UUID: harness.GPUUUID(node, 2), MemoryMiB: harness.GPUMemoryMiB, Shares: 1}})
	if r := room[harness.GPUUUID(node, 2)]; r.memoryMiB != harness.GPUMemoryMiB || r.cores != harness.GPUCores {
		t.Errorf("a GPU whose whole memory was held gives back %+v, want all of it", r)
	}
}

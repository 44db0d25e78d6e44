package queue

import (
	"reflect"
	"slices"
	"testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

func TestFragments(t *testing.T) {
	f := newFragments(20, 8, 1)
	if !reflect.DeepEqual(f, newFragments(20, 8, 1)) {
		t.Error("the same seed gave other fragments: the two runs would start apart")
	}
	if reflect.DeepEqual(f, newFragments(20, 8, 2)) {
		t.Error("another seed gave the same fragments")
	}
	if f.gpus() != 160 {
		t.Errorf("%d GPUs, want 160", f.gpus())
	}
	var free int64
	for _, gpus := range f {
		for _, mib := range gpus {
			if !slices.Contains(fragmentSizesMiB(), mib) {
				t.Fatalf("a GPU has %d MiB free, not one of the sizes %v", mib, fragmentSizesMiB())
			}
			free += mib
		}
	}
	quota := f.quota(10)
	if got := quota[gpuv1alpha1.QuotaMemory]; got.Value() != free || f.freeMiB() != free {
		t.Errorf("memory quota %s, free %d MiB; want both the %d MiB the fragments leave", got.String(), f.freeMiB(), free)
	}
	if got := quota[gpuv1alpha1.QuotaGPUs]; got.Value() != 160*9 {
		t.Errorf("GPU quota %s, want every share the earlier pods left, %d", got.String(), 160*9)
	}
}

// TestQueueMixAgainstFragments pins what makes the queue a test of fit:
// every shape fits some fragment, so no Job waits forever on an empty
// cluster, and none fits every fragment, so the totals alone overstate
// the room.
func TestQueueMixAgainstFragments(t *testing.T) {
	sizes := fragmentSizesMiB()
	for _, s := range queueMix() {
		if s.MemoryMiB == 0 {
			t.Errorf("shape %q asks for whole GPUs, which Kueue's memory quota does not count", s.Name)
		}
		if s.MemoryMiB > slices.Max(sizes) {
			t.Errorf("shape %q (%d MiB) fits no fragment", s.Name, s.MemoryMiB)
		}
	}
	var largest int64
	for _, s := range queueMix() {
		largest = max(largest, s.MemoryMiB)
	}
	if largest <= slices.Min(sizes) {
		t.Errorf("every shape fits the smallest fragment (%d MiB): the fragments constrain nothing", slices.Min(sizes))
	}
}

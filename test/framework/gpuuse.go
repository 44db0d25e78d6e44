package framework

import (
	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// AddGPUUse adds what an allocation's containers hold of each GPU to used,
// by GPU UUID: the memory, cores and shares that the GPU accounting
// invariants compare with each GPU's capacity.
func AddGPUUse(used map[string]*placement.Hold, a *gpuv1alpha1.GPUAllocation) {
	for _, h := range placement.Holds(a.Spec.Containers) {
		u := used[h.UUID]
		if u == nil {
			u = &placement.Hold{UUID: h.UUID}
			used[h.UUID] = u
		}
		u.MemoryMiB += h.MemoryMiB
		u.Cores += h.Cores
		u.Shares += h.Shares
	}
}

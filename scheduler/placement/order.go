package placement

import (
	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// orderLongRunning lists the Sidecar and App containers in search order.
// Apps go hardest first, which helps greedy and prunes the search early;
// equal Apps end up side by side, which the search uses to skip permutations.
func (e *engine) orderLongRunning() {
	cs := e.req.Containers
	for c := range cs {
		if cs[c].Kind == gpuv1alpha1.ContainerSidecar {
			e.longRunning[e.numLong] = uint8(c)
			e.numLong++
		}
	}
	e.sidecars = e.numLong
	for c := range cs {
		if cs[c].Kind == gpuv1alpha1.ContainerInit || cs[c].Kind == gpuv1alpha1.ContainerSidecar {
			continue
		}
		i := e.numLong
		for ; i > e.sidecars && harder(&cs[c], &cs[e.longRunning[i-1]]); i-- {
			e.longRunning[i] = e.longRunning[i-1]
		}
		e.longRunning[i] = uint8(c)
		e.numLong++
	}
}

// harder orders App containers for placement: exclusive first, then more
// GPUs, whole memory, more memory, more cores.
func harder(a, b *gpurequest.ContainerRequest) bool {
	if ea, eb := a.Cores == gpurequest.MaxPercent, b.Cores == gpurequest.MaxPercent; ea != eb {
		return ea
	}
	if a.Count != b.Count {
		return a.Count > b.Count
	}
	if wa, wb := a.WholeMemory(), b.WholeMemory(); wa != wb {
		return wa
	}
	if a.MemoryMiB != b.MemoryMiB {
		return a.MemoryMiB > b.MemoryMiB
	}
	if a.MemoryPercent != b.MemoryPercent {
		return a.MemoryPercent > b.MemoryPercent
	}
	return a.Cores > b.Cores
}

// sameRequest reports whether two App containers are interchangeable.
func sameRequest(a, b *gpurequest.ContainerRequest) bool {
	return a.Kind == gpuv1alpha1.ContainerApp && b.Kind == gpuv1alpha1.ContainerApp &&
		a.Count == b.Count && a.MemoryMiB == b.MemoryMiB && a.MemoryPercent == b.MemoryPercent && a.Cores == b.Cores
}

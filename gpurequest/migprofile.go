package gpurequest

import gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"

// MIGProfile returns the index in profiles, the geometry of a GPU of
// gpuMemoryMiB whose MIG instances are made on demand, of the profile of
// the instance r gets there: the smallest that holds its memory and
// cores, or -1 when none does. A request that names no memory gets the
// profile with the most. Of profiles of equal memory the one with the
// least compute wins, then the first listed. Every mode chooses by it:
// the scheduler where it places the instance, the webhook where it
// writes a DRA claim's choices.
func (r ContainerRequest) MIGProfile(gpuMemoryMiB int64, profiles []gpuv1alpha1.MIGProfile) int {
	best := -1
	var need int64
	if !r.WholeMemory() {
		need = r.MemoryOn(gpuMemoryMiB)
	}
	for i := range profiles {
		p := &profiles[i]
		if p.MemoryMiB < need || p.ComputePercent < r.Cores {
			continue
		}
		switch {
		case best < 0:
			best = i
		case r.WholeMemory():
			if p.MemoryMiB > profiles[best].MemoryMiB {
				best = i
			}
		case p.MemoryMiB < profiles[best].MemoryMiB,
			p.MemoryMiB == profiles[best].MemoryMiB && p.ComputePercent < profiles[best].ComputePercent:
			best = i
		}
	}
	return best
}

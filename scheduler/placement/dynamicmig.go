package placement

import (
	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// A GPU whose MIG instances are made on demand (Device.MIG set) serves
// each container it is given with one instance of its own: the smallest
// profile that holds the container's memory and cores, at the first run
// of memory slices that no other instance takes. The instance's memory,
// compute and one share are held as a slice of a GPU is, and its slices
// beside them, so that no two instances ever overlap.

// migChoice is the profile and placement, indexes in a GPU's geometry, of
// the MIG instance made for a container; -1 when none.
type migChoice struct{ profile, placement int8 }

// migProfile returns the index in d's geometry of the profile of the
// instance c gets on d (gpurequest.ContainerRequest.MIGProfile), or -1
// when none holds it.
func migProfile(c *gpurequest.ContainerRequest, d *Device) int {
	return c.MIGProfile(d.MemoryMiB, d.MIG.Profiles)
}

// migMemoryOn is the memory of the instance c gets on d, or what c asks
// for when no profile holds it.
func migMemoryOn(c *gpurequest.ContainerRequest, d *Device) int64 {
	if p := migProfile(c, d); p >= 0 {
		return d.MIG.Profiles[p].MemoryMiB
	}
	return c.MemoryOn(d.MemoryMiB)
}

// migCoresOn is the compute of the instance c gets on d, or what c asks
// for when no profile holds it.
func migCoresOn(c *gpurequest.ContainerRequest, d *Device) int32 {
	if p := migProfile(c, d); p >= 0 {
		return d.MIG.Profiles[p].ComputePercent
	}
	return c.Cores
}

// migFit decides whether c gets an instance on d beside the slices taken
// (the node's, unless free, and the pod's own in p): the profile's index
// and the first free placement's, or the reason it gets none.
func migFit(c *gpurequest.ContainerRequest, d *Device, p use, free bool) (profile, placement int, r Reason, ok bool) {
	if c.Count > 1 {
		return -1, -1, ReasonMIGCount, false
	}
	profile = migProfile(c, d)
	if profile < 0 {
		return -1, -1, migShortfall(c, d), false
	}
	taken := p.slices
	if !free {
		taken |= d.UsedSlices
	}
	for i, pl := range d.MIG.Profiles[profile].Placements {
		if pl.Slices()&taken == 0 {
			return profile, i, 0, true
		}
	}
	return profile, -1, ReasonMIGRoom, false
}

// migShortfall says why no profile of d holds c: its memory, or else its
// cores.
func migShortfall(c *gpurequest.ContainerRequest, d *Device) Reason {
	for i := range d.MIG.Profiles {
		if c.WholeMemory() || d.MIG.Profiles[i].MemoryMiB >= c.MemoryOn(d.MemoryMiB) {
			return ReasonCores
		}
	}
	return ReasonMemory
}

// migAllocation is the instance recorded for a container given profile
// at placement of d's geometry.
func migAllocation(d *Device, profile, placement int) *gpuv1alpha1.MIGAllocation {
	p := &d.MIG.Profiles[profile]
	return &gpuv1alpha1.MIGAllocation{Profile: p.Name, ProfileID: p.ProfileID, Placement: p.Placements[placement]}
}

// compareGeometry orders MIG geometries, none first, so that GPUs cut
// alike compare equal.
func compareGeometry(a, b *gpuv1alpha1.MIGGeometry) int {
	switch {
	case a == b:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	if c := compareKeys([]int64{int64(len(a.Profiles))}, []int64{int64(len(b.Profiles))}); c != 0 {
		return c
	}
	for i := range a.Profiles {
		pa, pb := &a.Profiles[i], &b.Profiles[i]
		ka := []int64{int64(pa.ProfileID), pa.MemoryMiB, int64(pa.ComputePercent), int64(len(pa.Placements))}
		kb := []int64{int64(pb.ProfileID), pb.MemoryMiB, int64(pb.ComputePercent), int64(len(pb.Placements))}
		if c := compareKeys(ka, kb); c != 0 {
			return c
		}
		for j := range pa.Placements {
			ka := []int64{int64(pa.Placements[j].Start), int64(pa.Placements[j].Size)}
			kb := []int64{int64(pb.Placements[j].Start), int64(pb.Placements[j].Size)}
			if c := compareKeys(ka, kb); c != 0 {
				return c
			}
		}
	}
	return 0
}

// dynamicMIGReason returns why a pod steered by sel may not use a GPU
// that makes MIG instances on demand, if it may not: it asks for shared
// whole GPUs, or names no MIG mode, or names profiles, which only
// instances laid out by the administrator serve.
func dynamicMIGReason(sel *gpurequest.Selection) (Reason, bool) {
	switch {
	case sel.Mode == gpurequest.ModeShared:
		return ReasonTypeMismatch, false
	case len(sel.MIGProfiles) > 0:
		return ReasonMIGProfile, false
	case sel.Mode != gpurequest.ModeMIG:
		return ReasonMIGOnly, false
	}
	return 0, true
}

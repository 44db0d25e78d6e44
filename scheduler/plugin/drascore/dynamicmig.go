package drascore

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// Tessera's driver publishes a GPU whose MIG instances are made on demand
// as one device per instance it may be cut into, each consuming the GPU's
// counters. Placement sees the GPU itself, with its geometry, as in the
// other modes: the GPU is rebuilt from its instances, its capacity from
// its counters, and as used the instances the claims hold.

// migPart is one instance a GPU whose instances are made on demand may be
// cut into, as its slice publishes it.
type migPart struct {
	id         structured.DeviceID
	gpu        placement.Device // the GPU's attributes only
	counterSet string
	profile    gpuv1alpha1.MIGProfile // without its placements
	at         gpuv1alpha1.MIGPlacement
}

// readPart reads d as an instance of a GPU whose instances are made on
// demand, if it is one.
func readPart(d *resourceapi.Device, id structured.DeviceID) (migPart, bool) {
	start, ok := d.Attributes[gpuv1alpha1.DRAAttributeMIGStart]
	if !ok || start.IntValue == nil || len(d.ConsumesCounters) == 0 {
		return migPart{}, false
	}
	g := gpuDevice(d)
	return migPart{
		id:         id,
		gpu:        placement.Device{UUID: g.UUID, Index: g.Index, Model: g.Model, NUMANode: g.NUMANode, Healthy: true},
		counterSet: d.ConsumesCounters[0].CounterSet,
		profile:    gpuv1alpha1.MIGProfile{Name: g.MIGProfile, MemoryMiB: g.MemoryMiB, ComputePercent: g.Cores},
		at:         gpuv1alpha1.MIGPlacement{Start: int32(*start.IntValue), Size: int32(intAttribute(d, gpuv1alpha1.DRAAttributeMIGSize, 0))},
	}, true
}

// readCounters reads the capacity of the GPUs whose instances are made on
// demand from their counter sets, by name.
func readCounters(counterSets []resourceapi.CounterSet) map[string]placement.Device {
	out := make(map[string]placement.Device, len(counterSets))
	for _, cs := range counterSets {
		var d placement.Device
		if c, ok := cs.Counters[string(gpuv1alpha1.DRACapacityMemory)]; ok {
			d.MemoryMiB = c.Value.Value() >> 20
		}
		if c, ok := cs.Counters[string(gpuv1alpha1.DRACapacityCores)]; ok {
			d.Cores = int32(c.Value.Value())
		}
		if c, ok := cs.Counters[string(gpuv1alpha1.DRACapacityShares)]; ok {
			d.ShareLimit = int32(c.Value.Value())
		}
		out[cs.Name] = d
	}
	return out
}

// addMadeOnDemand appends to n the GPUs of a node's slices whose
// instances are made on demand, each with the memory slices, memory,
// compute and a share of every instance in allocated as used.
func addMadeOnDemand(n *placement.Node, slices []*gpuSlice, allocated sets.Set[structured.DeviceID]) {
	first := len(n.Devices)
	for _, g := range slices {
		for i := range g.parts {
			p := &g.parts[i]
			d := madeOnDemandGPU(n, first, p, slices)
			addPlacement(d.MIG, p)
			if allocated.Has(p.id) {
				d.UsedSlices |= p.at.Slices()
				d.UsedMemoryMiB += p.profile.MemoryMiB
				d.UsedCores += p.profile.ComputePercent
				d.UsedShares++
			}
		}
	}
}

// madeOnDemandGPU returns the GPU of instance p among n's devices from
// first on, appending it, with its capacity and an empty geometry, when
// it is not there yet.
func madeOnDemandGPU(n *placement.Node, first int, p *migPart, slices []*gpuSlice) *placement.Device {
	for i := first; i < len(n.Devices); i++ {
		if n.Devices[i].UUID == p.gpu.UUID {
			return &n.Devices[i]
		}
	}
	d := p.gpu
	for _, g := range slices {
		if c, ok := g.counters[p.counterSet]; ok {
			d.MemoryMiB, d.Cores, d.ShareLimit = c.MemoryMiB, c.Cores, c.ShareLimit
		}
	}
	d.MIG = &gpuv1alpha1.MIGGeometry{}
	n.Devices = append(n.Devices, d)
	return &n.Devices[len(n.Devices)-1]
}

// addPlacement adds instance p's placement to its profile in g, which
// keeps the order the slices list them in: the order placement tries.
func addPlacement(g *gpuv1alpha1.MIGGeometry, p *migPart) {
	for i := range g.Profiles {
		if g.Profiles[i].Name == p.profile.Name {
			g.Profiles[i].Placements = append(g.Profiles[i].Placements, p.at)
			return
		}
	}
	profile := p.profile
	profile.Placements = []gpuv1alpha1.MIGPlacement{p.at}
	g.Profiles = append(g.Profiles, profile)
}

// slicePart returns the instance id names among slices, nil when none is.
func slicePart(slices []*gpuSlice, id structured.DeviceID) *migPart {
	for _, g := range slices {
		for i := range g.parts {
			if g.parts[i].id == id {
				return &g.parts[i]
			}
		}
	}
	return nil
}

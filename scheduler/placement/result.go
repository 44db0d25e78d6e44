package placement

import (
	"math/bits"
	"strings"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// assignment writes the placement that place found, containers in the
// request's order and each container's GPUs in the node's order.
func (e *engine) assignment() []gpuv1alpha1.ContainerAllocation {
	out := make([]gpuv1alpha1.ContainerAllocation, len(e.req.Containers))
	for c := range e.req.Containers {
		cr := &e.req.Containers[c]
		devices := make([]gpuv1alpha1.DeviceAllocation, 0, bits.OnesCount64(e.chosen[c]))
		for m := e.chosen[c]; m != 0; m &= m - 1 {
			d := &e.node.Devices[bits.TrailingZeros64(m)]
			da := gpuv1alpha1.DeviceAllocation{
				UUID:      d.UUID,
				Index:     d.Index,
				MemoryMiB: memoryOn(cr, d),
				Cores:     coresOn(cr, d),
			}
			if at := e.migAt[c]; d.MIG != nil && at.placement >= 0 {
				da.MIG = migAllocation(d, int(at.profile), int(at.placement))
			}
			devices = append(devices, da)
		}
		out[c] = gpuv1alpha1.ContainerAllocation{Name: cr.Name, Kind: cr.Kind, Devices: devices}
	}
	return out
}

// utilisation is the node's allocated share of memory and of cores,
// averaged, with the placement that place found added as Holds would
// count it: on each GPU the most of any phase.
func (e *engine) utilisation() float64 {
	var capMemory, usedMemory, capCores, usedCores int64
	for g := range e.node.Devices {
		d := &e.node.Devices[g]
		holdMemory, holdCores := e.pod[g].memoryMiB, int64(e.pod[g].cores)
		for c := range e.req.Containers {
			cr := &e.req.Containers[c]
			if cr.Kind != gpuv1alpha1.ContainerInit || e.chosen[c]&(1<<g) == 0 {
				continue
			}
			u := e.sidecarUse(c, g)
			u.add(memoryOn(cr, d), coresOn(cr, d))
			holdMemory, holdCores = max(holdMemory, u.memoryMiB), max(holdCores, int64(u.cores))
		}
		capMemory += d.MemoryMiB
		capCores += int64(d.Cores)
		usedMemory += d.UsedMemoryMiB + holdMemory
		usedCores += int64(d.UsedCores) + holdCores
	}
	u := (fraction(usedMemory, capMemory) + fraction(usedCores, capCores)) / 2
	return min(max(u, 0), 1)
}

// failure explains why place failed: for each GPU the first rule it breaks
// for the first container it does not fit, and whether an empty node would
// fit the request, which it decides with empty, an engine set to ignore
// usage.
func (e *engine) failure(f *Failure, empty *engine) {
	f.reset(len(e.node.Devices))
	f.Detail, f.Needed = e.outcome, e.needed
	if e.outcome == DetailTooManyDevices || e.outcome == DetailInvalidRequest {
		f.Unresolvable = true
		return
	}
	// One pass per container, in order: a GPU's reason is the first rule
	// it breaks for the first container it does not fit, NUMA included.
	var reasons [MaxDevices]Reason
	decided := ^e.static
	for g := range e.node.Devices {
		if r, ok := staticReason(&e.node.Devices[g], &e.req.Selection); !ok {
			reasons[g] = r
		}
	}
	for c := range e.req.Containers {
		cr := &e.req.Containers[c]
		var alone uint64
		for m := e.static; m != 0; m &= m - 1 {
			g := bits.TrailingZeros64(m)
			r, ok := check(&e.node.Devices[g], cr, use{}, e.free)
			switch {
			case ok:
				alone |= 1 << g
			case decided&(1<<g) == 0:
				reasons[g] = r
				decided |= 1 << g
			}
		}
		if e.req.Selection.NUMABind {
			lost := alone &^ e.numaFit(alone, cr.Count) &^ decided
			for m := lost; m != 0; m &= m - 1 {
				reasons[bits.TrailingZeros64(m)] = ReasonNUMA
			}
			decided |= lost
		}
	}
	// Join does not allocate for the one profile a pod usually asks for.
	f.MIGProfiles = strings.Join(e.req.Selection.MIGProfiles, ",")
	f.Selected = len(e.req.Selection.UUIDs) > 0
	if f.Selected {
		f.Total = 0
	}
	named := 0
	for g := range e.node.Devices {
		d := &e.node.Devices[g]
		if f.Selected && !equalAnyFold(d.UUID, e.req.Selection.UUIDs) {
			continue
		}
		if f.Selected {
			f.Total++
		}
		if decided&(1<<g) == 0 {
			f.Fit++
			continue
		}
		f.Counts[reasons[g]]++
		if f.Selected && named < MaxNamed {
			f.Named[named] = e.named(d, reasons[g])
			named++
		}
	}
	// A search that gave up says nothing about an empty node either; the
	// node then counts as resolvable, which at worst lets preemption try.
	if !e.free && e.outcome != DetailSearchLimit {
		f.Unresolvable = !empty.place(e.node, e.req, false) && empty.outcome != DetailSearchLimit
	}
}

// named describes device d, which the pod selected and which fails for r.
func (e *engine) named(d *Device, r Reason) Named {
	n := Named{UUID: d.UUID, Index: d.Index, Reason: r, MemoryMiB: d.MemoryMiB, ShareLimit: d.ShareLimit}
	if !e.free {
		n.FreeMemoryMiB = max(d.MemoryMiB-d.UsedMemoryMiB, 0)
		n.FreeCores = max(d.Cores-d.UsedCores, 0)
		n.Whole = d.UsedShares == 1 && (d.UsedMemoryMiB >= d.MemoryMiB || d.UsedCores >= d.Cores)
	} else {
		n.FreeMemoryMiB, n.FreeCores = d.MemoryMiB, d.Cores
	}
	return n
}

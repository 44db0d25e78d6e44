package placement

import (
	"math/bits"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// engine is the scratch state of one placement. It holds fixed arrays, no
// slices or maps, so that it lives on the caller's stack and a placement
// allocates nothing. GPUs are numbered by their position in Node.Devices and
// sets of them are bit masks.
type engine struct {
	node *Node
	req  *Request
	// free ignores the node's usage: would the request fit an empty node?
	free    bool
	binpack bool
	// outcome is why place failed, when the per-GPU counts do not say.
	outcome Detail
	needed  int32
	// steps counts the exact search's steps against MaxSearchSteps.
	steps int

	// static is the set of GPUs passing health, cordon, type and UUID.
	static uint64
	// alone[c] is the set of GPUs container c fits on its own, and
	// candidates[c] those of them left by NUMA binding.
	alone      [MaxContainers]uint64
	candidates [MaxContainers]uint64
	// chosen[c] is the set of GPUs given to container c.
	chosen [MaxContainers]uint64
	// migAt[c] is, for container c given a GPU that makes MIG instances
	// on demand, the instance's profile and placement on it.
	migAt [MaxContainers]migChoice
	// dynamicMIG is set when a GPU that passes the static filters makes
	// MIG instances on demand: its slices make containers that run at
	// different times compete too.
	dynamicMIG bool
	// pod is the pod's use of each GPU in the long-running phase.
	pod [MaxDevices]use
	// loads caches each GPU's load from the node's usage, for the GPUs in
	// loaded.
	loads  [MaxDevices]float64
	loaded uint64

	// longRunning lists the Sidecar and App containers in search order:
	// Sidecars in the kubelet's order, then Apps hardest first.
	longRunning [MaxContainers]uint8
	numLong     int
	// sidecars is how many of longRunning are Sidecars; once they are
	// placed the Init containers can be checked.
	sidecars int

	searchState
}

// place decides whether the request fits and, when choose is set and it
// does, fills chosen. The engine may have placed another request before;
// place clears what that left, and no more than this request uses.
func (e *engine) place(node *Node, req *Request, choose bool) bool {
	e.reset(node, req)
	if len(node.Devices) > MaxDevices {
		e.outcome = DetailTooManyDevices
		return false
	}
	if !validRequest(req) {
		e.outcome = DetailInvalidRequest
		return false
	}
	filters := hasFilters(&req.Selection)
	for g := range node.Devices {
		d := &node.Devices[g]
		if d.Healthy && !d.Cordoned && !filters && d.MIG == nil {
			e.static |= 1 << g
		} else if _, ok := staticReason(d, &req.Selection); ok {
			e.static |= 1 << g
			e.dynamicMIG = e.dynamicMIG || d.MIG != nil
		}
	}
	for c := range req.Containers {
		cr := &req.Containers[c]
		set, seen := e.sameShape(c)
		if !seen {
			for m := e.static; m != 0; m &= m - 1 {
				g := bits.TrailingZeros64(m)
				if _, ok := check(&node.Devices[g], cr, use{}, e.free); ok {
					set |= 1 << g
				}
			}
		}
		e.alone[c] = set
		if req.Selection.NUMABind {
			set = e.numaFit(set, cr.Count)
		}
		if bits.OnesCount64(set) < int(cr.Count) {
			e.outcome, e.needed = DetailTooFew, cr.Count
			return false
		}
		e.candidates[c] = set
	}
	e.orderLongRunning()
	if !choose && e.sidecars == 0 && (!e.dynamicMIG || len(req.Containers) == 1) && (e.numLong <= 1 || e.roomy()) {
		// Containers that never run beside another of the pod's, or
		// that could all run together on any GPU they fit, fit wherever
		// each fits alone, which the candidates already say. MIG
		// instances made on demand live as long as the pod, so that
		// its containers compete for their slices whenever they run.
		return true
	}
	if e.greedy() {
		return true
	}
	clear(e.chosen[:])
	clear(e.pod[:])
	// Init containers fit beside the Sidecars whatever the Apps take,
	// but for the slices of MIG instances made on demand.
	if e.search(0) && e.placeInits() {
		return true
	}
	if e.steps > MaxSearchSteps {
		e.outcome = DetailSearchLimit
	} else {
		e.outcome = DetailTogether
	}
	return false
}

// reset readies the engine for a placement, keeping free. Of the per-GPU
// and per-container state it clears what is added to, not what is
// written before it is read.
func (e *engine) reset(node *Node, req *Request) {
	e.node, e.req = node, req
	e.binpack = req.GPUPolicy == gpurequest.Binpack
	e.outcome, e.needed, e.steps = DetailNone, 0, 0
	e.static, e.loaded = 0, 0
	e.dynamicMIG = false
	e.numLong, e.sidecars = 0, 0
	clear(e.chosen[:min(len(req.Containers), MaxContainers)])
	clear(e.pod[:min(len(node.Devices), MaxDevices)])
}

// sameShape returns the GPUs an earlier container asking the same memory
// and cores fits on its own, before NUMA binding, which do not depend on
// the count. Pods often repeat a container's request.
func (e *engine) sameShape(c int) (uint64, bool) {
	cr := &e.req.Containers[c]
	for k := range c {
		o := &e.req.Containers[k]
		if o.MemoryMiB == cr.MemoryMiB && o.MemoryPercent == cr.MemoryPercent && o.Cores == cr.Cores {
			return e.alone[k], true
		}
	}
	return 0, false
}

// validRequest checks the limits the engine's fixed arrays rely on, for a
// Request built without NewRequest.
func validRequest(req *Request) bool {
	if len(req.Containers) > MaxContainers {
		return false
	}
	for i := range req.Containers {
		c := &req.Containers[i]
		if c.Count < 1 || c.Count > MaxDevices || c.MemoryMiB < 0 || c.MemoryMiB > gpurequest.MaxMemoryMiB ||
			c.MemoryPercent < 0 || c.MemoryPercent > gpurequest.MaxPercent || c.Cores < 0 || c.Cores > gpurequest.MaxPercent {
			return false
		}
	}
	return true
}

// take gives GPU g to long-running container c.
func (e *engine) take(c, g int) {
	d := &e.node.Devices[g]
	cr := &e.req.Containers[c]
	e.chosen[c] |= 1 << g
	e.takeSlices(c, g)
	e.pod[g].add(memoryOn(cr, d), coresOn(cr, d))
}

// takeSlices places container c's MIG instance on GPU g, when g makes
// them on demand, at the first free run of slices, and marks the slices
// taken by the pod.
func (e *engine) takeSlices(c, g int) {
	d := &e.node.Devices[g]
	if d.MIG == nil {
		return
	}
	profile, placement, _, _ := migFit(&e.req.Containers[c], d, e.pod[g], e.free)
	e.migAt[c] = migChoice{profile: int8(profile), placement: int8(placement)}
	if placement >= 0 {
		e.pod[g].slices |= d.MIG.Profiles[profile].Placements[placement].Slices()
	}
}

// sidecarUse is what the Sidecars listed before container c take on GPU g:
// the company an Init container at c has.
func (e *engine) sidecarUse(c, g int) use {
	// The slices of MIG instances made on demand are the pod's for its
	// whole life.
	u := use{slices: e.pod[g].slices}
	d := &e.node.Devices[g]
	for k := range c {
		cr := &e.req.Containers[k]
		if cr.Kind == gpuv1alpha1.ContainerSidecar && e.chosen[k]&(1<<g) != 0 {
			u.add(memoryOn(cr, d), coresOn(cr, d))
		}
	}
	return u
}

// roomy reports whether every GPU could hold at once all the long-running
// containers that fit it alone. Then any choice of GPUs for each of them
// fits, and no search is needed to know that the pod fits.
func (e *engine) roomy() bool {
	for m := e.static; m != 0; m &= m - 1 {
		g := bits.TrailingZeros64(m)
		d := &e.node.Devices[g]
		var all use
		alone := false
		for i := range e.numLong {
			c := int(e.longRunning[i])
			if e.candidates[c]&(1<<g) == 0 {
				continue
			}
			cr := &e.req.Containers[c]
			all.add(memoryOn(cr, d), coresOn(cr, d))
			alone = alone || exclusive(cr, d)
		}
		if _, ok := room(d, all, alone, e.free); all.shares > 1 && (!ok || d.MIG != nil) {
			return false
		}
	}
	return true
}

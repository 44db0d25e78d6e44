package placement

import (
	"math/bits"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// greedy places the long-running containers one at a time, hardest first,
// each on the GPUs the GPU policy likes best among those it still fits, and
// then the Init containers. For a single container it is exact, since one
// container's GPUs do not compete; for several it may miss a placement,
// which the exact search then finds.
func (e *engine) greedy() bool {
	for i := range e.numLong {
		c := int(e.longRunning[i])
		set := e.candidates[c] // with none of the pod placed yet, the same as fitsNow
		if i > 0 {
			set = e.fitsNow(c)
		}
		if !e.pick(c, set, true) {
			return false
		}
	}
	return e.placeInits()
}

// placeInits gives each Init container the GPUs it fits beside the
// Sidecars started before it. Init containers do not run at the same time
// as each other or the Apps, so each is placed on its own, exactly.
func (e *engine) placeInits() bool {
	for c := range e.req.Containers {
		if e.req.Containers[c].Kind == gpuv1alpha1.ContainerInit {
			if !e.pick(c, e.initFits(c), false) {
				return false
			}
		}
	}
	return true
}

// initsFit reports whether every Init container fits beside the Sidecars
// placed so far.
func (e *engine) initsFit() bool {
	for c := range e.req.Containers {
		cr := &e.req.Containers[c]
		if cr.Kind == gpuv1alpha1.ContainerInit && !e.enough(e.initFits(c), cr.Count) {
			return false
		}
	}
	return true
}

// fitsNow is the set of GPUs long-running container c fits beside the
// pod's containers placed so far.
func (e *engine) fitsNow(c int) uint64 {
	var set uint64
	cr := &e.req.Containers[c]
	for m := e.candidates[c]; m != 0; m &= m - 1 {
		g := bits.TrailingZeros64(m)
		if _, ok := check(&e.node.Devices[g], cr, e.pod[g], e.free); ok {
			set |= 1 << g
		}
	}
	return set
}

// initFits is the set of GPUs Init container c fits beside the Sidecars
// before it.
func (e *engine) initFits(c int) uint64 {
	var set uint64
	cr := &e.req.Containers[c]
	for m := e.candidates[c]; m != 0; m &= m - 1 {
		g := bits.TrailingZeros64(m)
		if _, ok := check(&e.node.Devices[g], cr, e.sidecarUse(c, g), e.free); ok {
			set |= 1 << g
		}
	}
	return set
}

// enough reports whether count GPUs of set can be chosen, on one NUMA node
// when the pod asks for NUMA binding.
func (e *engine) enough(set uint64, count int32) bool {
	if e.req.Selection.NUMABind {
		set = e.numaFit(set, count)
	}
	return bits.OnesCount64(set) >= int(count)
}

// pick gives container c the count GPUs of set that the GPU policy likes
// best; with NUMA binding, from the first NUMA node, in that order, with
// enough of them. It reports false when set has too few.
func (e *engine) pick(c int, set uint64, longRunning bool) bool {
	count := int(e.req.Containers[c].Count)
	if count == 1 && set != 0 {
		// One GPU from any NUMA node: the best, without sorting the rest.
		e.give(c, e.best(set), longRunning)
		return true
	}
	var ranked [MaxDevices]uint8
	n := e.rank(set, &ranked, true)
	numaBind := e.req.Selection.NUMABind
	var numa int32
	if numaBind {
		found := false
		for i := 0; i < n && !found; i++ {
			numa = e.node.Devices[ranked[i]].NUMANode
			found = e.sameNUMA(ranked[:n], numa) >= count
		}
		if !found {
			return false
		}
	} else if n < count {
		return false
	}
	for i := 0; i < n && count > 0; i++ {
		g := int(ranked[i])
		if numaBind && e.node.Devices[g].NUMANode != numa {
			continue
		}
		e.give(c, g, longRunning)
		count--
	}
	return true
}

// give gives GPU g to container c; a long-running container's use is
// added to the pod's.
func (e *engine) give(c, g int, longRunning bool) {
	if longRunning {
		e.take(c, g)
	} else {
		e.chosen[c] |= 1 << g
		e.takeSlices(c, g)
	}
}

// numaFit keeps the GPUs of set whose NUMA node has at least count GPUs in set.
func (e *engine) numaFit(set uint64, count int32) uint64 {
	var (
		nodes  [MaxDevices]int32
		sizes  [MaxDevices]int32
		groups [MaxDevices]uint64
		n      int
	)
	for m := set; m != 0; m &= m - 1 {
		g := bits.TrailingZeros64(m)
		numa := e.node.Devices[g].NUMANode
		k := 0
		for k < n && nodes[k] != numa {
			k++
		}
		if k == n {
			nodes[k] = numa
			n++
		}
		sizes[k]++
		groups[k] |= 1 << g
	}
	var kept uint64
	for k := range n {
		if sizes[k] >= count {
			kept |= groups[k]
		}
	}
	return kept
}

// sameNUMA counts the GPUs of list on NUMA node numa.
func (e *engine) sameNUMA(list []uint8, numa int32) int {
	n := 0
	for _, g := range list {
		if e.node.Devices[g].NUMANode == numa {
			n++
		}
	}
	return n
}

package placement

import (
	"math"
	"math/bits"
)

// MaxSearchSteps bounds the exact search of one placement. A step is one
// GPU tried for one container, or one GPU looked at by the room bounds;
// 1<<15 steps take about a millisecond. Greedy places every pod whose
// containers never run beside each other (one container, or Init
// containers and one App) and almost every other; the search runs only
// when greedy fails. With its symmetry cuts and room bounds it settled
// every random pod of up to 6 containers of up to 4 GPUs on 8-GPU nodes in
// under 6,000 steps (TestFitProperties checks it against brute force on
// small nodes). Only pods that need a true packing proof, such as many
// different containers on many different GPUs, reach the bound: the node is
// then refused with DetailSearchLimit, never over-committed.
const MaxSearchSteps = 1 << 15

// searchState is the part of the engine only the exact search uses.
type searchState struct {
	// order is the static GPUs in the policy's order with twins side by side.
	order    [MaxDevices]uint8
	numOrder int
	// first[i] is the position in order of the first GPU given to
	// longRunning[i].
	first [MaxContainers]uint8
}

// search tries every placement of the long-running containers from the
// i-th on, depth first, each container on every set of GPUs it fits, and
// checks the Init containers once the Sidecars are placed. It cuts three
// kinds of branch that cannot lead anywhere new:
//   - a branch ends as soon as a container left can no longer get enough
//     GPUs, or the containers left need more shares, memory or cores than
//     the GPUs they fit on have free;
//   - of two twin GPUs (same capacity, usage, NUMA node and use by the pod)
//     only the first is tried in each position;
//   - equal App containers take their GPUs in order, so their permutations
//     are not tried again.
func (e *engine) search(i int) bool {
	if i == 0 {
		e.numOrder = e.rank(e.static, &e.order, false)
	}
	if i == e.sidecars && e.sidecars > 0 && !e.initsFit() {
		return false
	}
	if i == e.numLong {
		return true
	}
	if !e.roomLeft(i) {
		return false
	}
	c := int(e.longRunning[i])
	from := 0
	if i > e.sidecars && sameRequest(&e.req.Containers[e.longRunning[i-1]], &e.req.Containers[c]) {
		from = int(e.first[i-1])
	}
	return e.combine(i, c, from, int(e.req.Containers[c].Count), 0)
}

// combine chooses the remaining left GPUs of container c (longRunning[i])
// from order[from:], all on NUMA node numa once the first is chosen when
// the pod binds NUMA, and goes on with the next container.
func (e *engine) combine(i, c, from, left int, numa int32) bool {
	if left == 0 {
		return e.search(i + 1)
	}
	cr := &e.req.Containers[c]
	firstPick := left == int(cr.Count)
	for pos := from; pos <= e.numOrder-left; pos++ {
		e.steps++
		if e.steps > MaxSearchSteps {
			return false
		}
		g := int(e.order[pos])
		d := &e.node.Devices[g]
		if e.candidates[c]&(1<<g) == 0 ||
			(e.req.Selection.NUMABind && !firstPick && d.NUMANode != numa) ||
			(pos > from && e.twins(i, int(e.order[pos-1]), g)) {
			continue
		}
		if _, ok := check(d, cr, e.pod[g], e.free); !ok {
			continue
		}
		if firstPick {
			e.first[i] = uint8(pos)
		}
		saved := e.pod[g]
		e.take(c, g)
		if e.combine(i, c, pos+1, left-1, d.NUMANode) {
			return true
		}
		e.pod[g] = saved
		e.chosen[c] &^= 1 << g
	}
	return false
}

// twins reports whether GPUs a and b are interchangeable for the rest of
// the search from the i-th long-running container on: they look the same
// to every rule and carry the same use by the pod. While Sidecars are still
// being placed, which Sidecars sit on a GPU matters to the Init containers,
// so only GPUs the pod does not use yet are twins then.
func (e *engine) twins(i, a, b int) bool {
	if e.pod[a] != e.pod[b] || (i < e.sidecars && e.pod[a].shares != 0) {
		return false
	}
	return e.compareClass(&e.node.Devices[a], &e.node.Devices[b]) == 0
}

// roomLeft reports whether the long-running containers from the i-th on
// might still fit beside the pod's containers placed so far. It only rules
// out; the search decides. Each container must still find enough GPUs on
// its own, and every group of them must find room on the GPUs it can use:
// the group of all, and for each container the group of those whose GPUs
// are among its own (see groupFits).
func (e *engine) roomLeft(i int) bool {
	var sets [MaxContainers]uint64
	var union uint64
	left := e.numLong - i
	for k := range left {
		c := int(e.longRunning[i+k])
		sets[k] = e.fitsNow(c)
		e.steps += bits.OnesCount64(e.candidates[c])
		if !e.enough(sets[k], e.req.Containers[c].Count) {
			return false
		}
		union |= sets[k]
	}
	if !e.groupFits(i, union, &sets) {
		return false
	}
	for k := range left {
		if k > 0 && sets[k] == sets[k-1] {
			continue
		}
		if !e.groupFits(i, sets[k], &sets) {
			return false
		}
	}
	return true
}

// groupFits checks the long-running containers from the i-th on whose GPUs
// (sets, indexed from i) all lie within the set within, against the free
// room of within. Together they need no more shares, memory and cores than
// within has free, each counted at its smallest take on any GPU it may use;
// no more containers than within has slots for, a GPU's slots being how
// many of the group's smallest takes it could hold; and containers that
// must have a GPU to themselves (solo: all its cores, or all its memory) need
// that many GPUs beside the largest other container asking for memory.
func (e *engine) groupFits(i int, within uint64, sets *[MaxContainers]uint64) bool {
	var count, memoryMiB, cores, solo int64
	var largestOther int32
	smallestMemory, smallestCores := int64(math.MaxInt64), int64(math.MaxInt64)
	for k := range e.numLong - i {
		if sets[k]&^within != 0 {
			continue
		}
		cr := &e.req.Containers[e.longRunning[i+k]]
		minMemory, minCores := int64(math.MaxInt64), int64(math.MaxInt64)
		isSolo := true
		for m := sets[k]; m != 0; m &= m - 1 {
			d := &e.node.Devices[bits.TrailingZeros64(m)]
			memory := memoryOn(cr, d)
			minMemory = min(minMemory, memory)
			minCores = min(minCores, int64(coresOn(cr, d)))
			isSolo = isSolo && (exclusive(cr, d) || (memory > 0 && memory >= d.MemoryMiB))
		}
		count += int64(cr.Count)
		memoryMiB += int64(cr.Count) * minMemory
		cores += int64(cr.Count) * minCores
		smallestMemory, smallestCores = min(smallestMemory, minMemory), min(smallestCores, minCores)
		switch {
		case isSolo:
			// Two solo containers never share a GPU, nor does a solo
			// container share one with a container asking for memory.
			solo += int64(cr.Count)
		case minMemory > 0:
			largestOther = max(largestOther, cr.Count)
		}
	}
	if count == 0 {
		return true
	}
	if solo+int64(largestOther) > int64(bits.OnesCount64(within)) {
		return false
	}
	var slots int64
	for m := within; m != 0; m &= m - 1 {
		g := bits.TrailingZeros64(m)
		e.steps++
		d, p := &e.node.Devices[g], &e.pod[g]
		freeShares := int64(d.ShareLimit) - int64(p.shares)
		freeMemory := d.MemoryMiB - p.memoryMiB
		freeCores := int64(d.Cores) - int64(p.cores)
		if !e.free {
			freeShares -= int64(d.UsedShares)
			freeMemory -= d.UsedMemoryMiB
			freeCores -= int64(d.UsedCores)
		}
		gpuSlots := freeShares
		if smallestMemory > 0 {
			gpuSlots = min(gpuSlots, freeMemory/smallestMemory)
		}
		if smallestCores > 0 {
			gpuSlots = min(gpuSlots, freeCores/smallestCores)
		}
		slots += max(gpuSlots, 0)
		memoryMiB -= freeMemory
		cores -= freeCores
	}
	return count <= slots && memoryMiB <= 0 && cores <= 0
}

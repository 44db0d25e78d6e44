package placement

import "math/bits"

// load is how busy GPU g is, as the GPU policy sees it: its allocated share
// of memory plus that of cores, the pod's own containers included when
// withPod is set. The node's part is worked out once per placement.
func (e *engine) load(g int, withPod bool) float64 {
	d := &e.node.Devices[g]
	if e.loaded&(1<<g) == 0 {
		e.loaded |= 1 << g
		e.loads[g] = 0
		if !e.free {
			e.loads[g] = fraction(d.UsedMemoryMiB, d.MemoryMiB) + fraction(int64(d.UsedCores), int64(d.Cores))
		}
	}
	if !withPod || e.pod[g].shares == 0 {
		return e.loads[g]
	}
	memory, cores := e.pod[g].memoryMiB, int64(e.pod[g].cores)
	if !e.free {
		memory += d.UsedMemoryMiB
		cores += int64(d.UsedCores)
	}
	return fraction(memory, d.MemoryMiB) + fraction(cores, int64(d.Cores))
}

func fraction(used, capacity int64) float64 {
	if capacity <= 0 {
		return 0
	}
	return float64(used) / float64(capacity)
}

// rank lists the GPUs of set in the GPU policy's order, best first: binpack
// the busiest, spread the emptiest, ties by index. Without the pod's use
// (the search's fixed order) equal GPUs are also put side by side, so the
// search can tell twins by looking at a neighbour. It returns how many it
// listed.
func (e *engine) rank(set uint64, out *[MaxDevices]uint8, withPod bool) int {
	// keys sort ascending: the load, negated for binpack.
	var keys [MaxDevices]float64
	n := 0
	for m := set; m != 0; m &= m - 1 {
		g := bits.TrailingZeros64(m)
		k := e.load(g, withPod)
		if e.binpack {
			k = -k
		}
		i := n
		for ; i > 0 && (k < keys[i-1] || (k == keys[i-1] && e.tieBefore(g, int(out[i-1]), withPod))); i-- {
			out[i], keys[i] = out[i-1], keys[i-1]
		}
		out[i], keys[i] = uint8(g), k
		n++
	}
	return n
}

// best is the GPU of set, which must not be empty, that rank would list first.
func (e *engine) best(set uint64) int {
	best, bestKey := -1, 0.0
	for m := set; m != 0; m &= m - 1 {
		g := bits.TrailingZeros64(m)
		k := e.load(g, true)
		if e.binpack {
			k = -k
		}
		if best < 0 || k < bestKey || (k == bestKey && e.tieBefore(g, best, true)) {
			best, bestKey = g, k
		}
	}
	return best
}

// tieBefore orders GPUs a and b of equal load: by class when withPod is
// not set, then MIG instances by size, then by index, then by position.
func (e *engine) tieBefore(a, b int, withPod bool) bool {
	da, db := &e.node.Devices[a], &e.node.Devices[b]
	if !withPod {
		if c := e.compareClass(da, db); c != 0 {
			return c < 0
		}
	}
	// Of two MIG instances, the smaller goes first: a container that
	// fits a small one leaves the large ones to those that need them.
	if da.MIGProfile != "" && db.MIGProfile != "" && da.MemoryMiB != db.MemoryMiB {
		return da.MemoryMiB < db.MemoryMiB
	}
	if da.Index != db.Index {
		return da.Index < db.Index
	}
	return a < b
}

// compareClass orders devices by everything placement looks at after the
// static filters, so that interchangeable devices compare equal.
func (e *engine) compareClass(a, b *Device) int {
	ka := [...]int64{a.MemoryMiB, int64(a.Cores), int64(a.ShareLimit), int64(a.NUMANode), 0, 0, 0, 0}
	kb := [...]int64{b.MemoryMiB, int64(b.Cores), int64(b.ShareLimit), int64(b.NUMANode), 0, 0, 0, 0}
	if !e.free {
		ka[4], ka[5], ka[6], ka[7] = a.UsedMemoryMiB, int64(a.UsedCores), int64(a.UsedShares), int64(a.UsedSlices)
		kb[4], kb[5], kb[6], kb[7] = b.UsedMemoryMiB, int64(b.UsedCores), int64(b.UsedShares), int64(b.UsedSlices)
	}
	if c := compareKeys(ka[:], kb[:]); c != 0 {
		return c
	}
	return compareGeometry(a.MIG, b.MIG)
}

// compareKeys compares two keys of equal length in lexical order.
func compareKeys(ka, kb []int64) int {
	for i := range ka {
		switch {
		case ka[i] < kb[i]:
			return -1
		case ka[i] > kb[i]:
			return 1
		}
	}
	return 0
}

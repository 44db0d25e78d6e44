package placement

import "math/bits"

// load is how busy GPU g is, as the GPU policy sees it: its allocated share
// of memory plus that of cores, the pod's own containers included when
// withPod is set.
func (e *engine) load(g int, withPod bool) float64 {
	d := &e.node.Devices[g]
	var memory int64
	var cores int32
	if !e.free {
		memory, cores = d.UsedMemoryMiB, d.UsedCores
	}
	if withPod {
		memory += e.pod[g].memoryMiB
		cores += e.pod[g].cores
	}
	return fraction(memory, d.MemoryMiB) + fraction(int64(cores), int64(d.Cores))
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
	var loads [MaxDevices]float64
	n := 0
	for m := set; m != 0; m &= m - 1 {
		g := bits.TrailingZeros64(m)
		l := e.load(g, withPod)
		i := n
		for ; i > 0 && e.before(g, l, int(out[i-1]), loads[i-1], withPod); i-- {
			out[i], loads[i] = out[i-1], loads[i-1]
		}
		out[i], loads[i] = uint8(g), l
		n++
	}
	return n
}

// before reports whether GPU a (with load la) ranks ahead of b (load lb).
func (e *engine) before(a int, la float64, b int, lb float64, withPod bool) bool {
	if la != lb {
		if e.binpack {
			return la > lb
		}
		return la < lb
	}
	da, db := &e.node.Devices[a], &e.node.Devices[b]
	if !withPod {
		if c := e.compareClass(da, db); c != 0 {
			return c < 0
		}
	}
	if da.Index != db.Index {
		return da.Index < db.Index
	}
	return a < b
}

// compareClass orders devices by everything placement looks at after the
// static filters, so that interchangeable devices compare equal.
func (e *engine) compareClass(a, b *Device) int {
	ka := [...]int64{a.MemoryMiB, int64(a.Cores), int64(a.ShareLimit), int64(a.NUMANode), 0, 0, 0}
	kb := [...]int64{b.MemoryMiB, int64(b.Cores), int64(b.ShareLimit), int64(b.NUMANode), 0, 0, 0}
	if !e.free {
		ka[4], ka[5], ka[6] = a.UsedMemoryMiB, int64(a.UsedCores), int64(a.UsedShares)
		kb[4], kb[5], kb[6] = b.UsedMemoryMiB, int64(b.UsedCores), int64(b.UsedShares)
	}
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

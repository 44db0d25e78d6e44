package placement

// MaxSearchSteps bounds the exact search: the GPUs it tries, over all
// containers, for one placement. Greedy places every single-container pod
// and almost every other; the search runs only when greedy fails, and with
// the symmetry cuts below it settles pods of a handful of containers on
// nodes of up to 64 GPUs in far fewer steps. When it gives up, the node is
// refused with DetailSearchLimit, never over-committed; one search costs at
// most a few milliseconds.
const MaxSearchSteps = 1 << 16

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
//   - a container that can no longer get enough GPUs ends the branch at once;
//   - of two twin GPUs (same capacity, usage and NUMA node, neither used by
//     the pod yet) only the first is tried in each position;
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
	for k := i; k < e.numLong; k++ {
		c := int(e.longRunning[k])
		if !e.enough(e.fitsNow(c), e.req.Containers[c].Count) {
			return false
		}
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
			(pos > from && e.twins(int(e.order[pos-1]), g)) {
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
// the search: neither carries any of the pod's containers, and they look
// the same to every rule.
func (e *engine) twins(a, b int) bool {
	return e.pod[a].shares == 0 && e.pod[b].shares == 0 &&
		e.compareClass(&e.node.Devices[a], &e.node.Devices[b]) == 0
}

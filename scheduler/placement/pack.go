package placement

// Pack places the requests on the node one after another, each beside the
// ones placed before it, as Fit would place each and Holds would count it,
// and changes the node's usage by what they hold. A request that does not
// fit is passed over. It returns how many were placed, stopping once limit
// are (no limit when limit is 0). The node must be the caller's copy.
func (ft *Fitter) Pack(node *Node, reqs []*Request, limit int) int {
	placed := 0
	for _, req := range reqs {
		if limit > 0 && placed == limit {
			break
		}
		if !ft.e.place(node, req, true) {
			continue
		}
		node.Add(Holds(ft.e.assignment()))
		placed++
	}
	return placed
}

// Fragments counts the node's GPUs that are partly held: some pod holds
// them, and memory and compute are still left on them, room that only a
// pod small enough for what is left can use. An empty GPU, a full one, and
// one that is unhealthy or cordoned are no fragments.
func (n *Node) Fragments() int {
	count := 0
	for i := range n.Devices {
		d := &n.Devices[i]
		if !d.Healthy || d.Cordoned || d.UsedShares == 0 {
			continue
		}
		if d.UsedMemoryMiB < d.MemoryMiB && d.UsedCores < d.Cores && d.UsedShares < d.ShareLimit {
			count++
		}
	}
	return count
}

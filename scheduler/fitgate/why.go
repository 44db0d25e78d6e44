package fitgate

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// WhyMaxAge is how long the reason a shape waits is reused: finding it
// walks every node, and the pods of one shape are held together.
const WhyMaxAge = time.Second

// Why says, in words for a pod's event, why no node could hold req by its
// GPUs now. Only the nodes that could hold it were their GPUs all free
// count. Most often no GPU of theirs has the memory a container asks for
// free, and it names the GPU with the most; otherwise, or when the pod
// picks its GPUs by UUID or is limited to MIG instances, it says what each
// node lacks, counting nodes alike as kube-scheduler does ("2 node(s) had
// 1/8 GPUs that fit, 2 needed (7 not enough memory)"), the most common
// first. key is ShapeKey(req). The words are reused for WhyMaxAge, and
// name the same nodes while nothing changes.
func (x *Index) Why(key string, req *placement.Request) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	now := x.clock.Now()
	s := x.shape(key, req, now)
	if s.why == "" || now.Sub(s.whyAt) > WhyMaxAge {
		s.why, s.whyAt = x.why(req, now), now
	}
	return s.why
}

// maxWhys is the most kinds of node Why names.
const maxWhys = 3

// why finds the reason req waits. It runs under x.mu.
func (x *Index) why(req *placement.Request, now time.Time) string {
	var (
		f        placement.Failure
		gpuNode  string
		gpuFree  int64
		gpuFound bool
		possible int
	)
	// possibleNode reports whether n could hold req were its GPUs free,
	// leaving in f why it cannot now.
	possibleNode := func(n *view.Node) bool {
		closed, _ := x.rules.Closed(n, now, req)
		return closed.OK() && !x.ft.Feasible(&n.Placement, req, &f) && !f.Unresolvable
	}
	x.view.Each(func(n *view.Node) {
		if !possibleNode(n) {
			return
		}
		possible++
		name := n.Placement.Name
		if free, ok := MostFreeMemoryMiB(&n.Placement); ok && (!gpuFound || free > gpuFree || free == gpuFree && name < gpuNode) {
			gpuNode, gpuFree, gpuFound = name, free, true
		}
	}, nil)
	// A pod that picks its GPUs by UUID is told what each one lacks, and
	// so is a pod limited to MIG instances, which free memory does not
	// hold: a free run of slices or a free instance does.
	asked := MostMemoryMiB(req)
	if len(req.Selection.UUIDs) > 0 || req.Selection.Mode == gpurequest.ModeMIG {
		asked = 0
	}
	switch {
	case possible == 0:
		return "no node with GPUs that could hold the pod takes pods now"
	case asked > 0 && !gpuFound:
		return fmt.Sprintf("no GPU has %d MiB free; none takes another pod", asked)
	case asked > 0 && gpuFree < asked:
		return fmt.Sprintf("no GPU has %d MiB free; the largest free is %d MiB on %s", asked, gpuFree, gpuNode)
	}
	counts := map[string]int{}
	x.view.Each(func(n *view.Node) {
		if possibleNode(n) {
			counts[f.Error()]++
		}
	}, nil)
	whys := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b))
	})
	var parts []string
	for i, why := range whys {
		if i == maxWhys {
			parts = append(parts, fmt.Sprintf("%d node(s) for other reasons", possible-sumCounts(counts, whys[:i])))
			break
		}
		parts = append(parts, fmt.Sprintf("%d %s", counts[why], why))
	}
	return strings.Join(parts, "; ")
}

// sumCounts adds up the counts of whys.
func sumCounts(counts map[string]int, whys []string) int {
	sum := 0
	for _, why := range whys {
		sum += counts[why]
	}
	return sum
}

// MostMemoryMiB is the most memory in MiB that one container of req asks
// of each of its GPUs; a percentage or a whole GPU counts as none, since
// every GPU has it.
func MostMemoryMiB(req *placement.Request) int64 {
	var most int64
	for i := range req.Containers {
		most = max(most, req.Containers[i].MemoryMiB)
	}
	return most
}

// MostFreeMemoryMiB is the most free memory of one GPU of the node that
// takes another container, and whether one does.
func MostFreeMemoryMiB(n *placement.Node) (int64, bool) {
	var most int64
	found := false
	for i := range n.Devices {
		d := &n.Devices[i]
		if d.Healthy && !d.Cordoned && d.UsedShares < d.ShareLimit {
			most, found = max(most, d.MemoryMiB-d.UsedMemoryMiB), true
		}
	}
	return most, found
}

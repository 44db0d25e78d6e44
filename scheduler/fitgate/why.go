package fitgate

import (
	"fmt"
	"time"

	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// WhyMaxAge is how long the reason a shape waits is reused: finding it
// walks every node, and the pods of one shape are held together.
const WhyMaxAge = time.Second

// Why says, in words for a pod's event, why no node could hold req by its
// GPUs now: most often that no GPU has the memory a container asks for
// free, naming the GPU with the most; otherwise what the node with the
// most free GPU memory lacks. key is ShapeKey(req). The words are reused
// for WhyMaxAge, and name the same node while nothing changes.
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

// roomiest is the node with the most free GPU memory, and its GPU with
// the most.
type roomiest struct {
	node, gpuNode       string
	nodeFree, gpuFree   int64
	nodeFound, gpuFound bool
	failure             placement.Failure
}

// why finds the reason req waits. It runs under x.mu.
func (x *Index) why(req *placement.Request, now time.Time) string {
	var r roomiest
	x.view.Each(func(n *view.Node) {
		if closed, _ := x.rules.Closed(n, now, req); !closed.OK() {
			return
		}
		name := n.Placement.Name
		if free := n.Placement.FreeMemoryMiB(); !r.nodeFound || free > r.nodeFree || free == r.nodeFree && name < r.node {
			r.node, r.nodeFree, r.nodeFound = name, free, true
			x.ft.Feasible(&n.Placement, req, &r.failure)
		}
		if free, ok := MostFreeMemoryMiB(&n.Placement); ok && (!r.gpuFound || free > r.gpuFree || free == r.gpuFree && name < r.gpuNode) {
			r.gpuNode, r.gpuFree, r.gpuFound = name, free, true
		}
	}, nil)
	asked := MostMemoryMiB(req)
	switch {
	case !r.nodeFound:
		return "no node with GPUs takes pods now"
	case asked > 0 && (!r.gpuFound || r.gpuFree < asked):
		if !r.gpuFound {
			return fmt.Sprintf("no GPU has %d MiB free; none takes another pod", asked)
		}
		return fmt.Sprintf("no GPU has %d MiB free; the largest free is %d MiB on %s", asked, r.gpuFree, r.gpuNode)
	}
	return "no node can hold the pod's GPUs now; " + r.failure.Of("the node with the most free GPU memory, "+r.node+",")
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

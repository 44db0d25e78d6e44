package backlog

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// backlogView is what the bench knows of the GPUs in backlog mode: every
// node's GPUs with what the running pods hold on them, and how many pods
// of each shape still wait. It decides with Tessera's placement core, the
// extender's and the plugin's, whether a waiting pod fits a node. It is
// not safe for concurrent use.
type backlogView struct {
	mix   harness.Mix
	names []string
	nodes map[string]*placement.Node
	// requests are the shapes' requests as Tessera reads them from the
	// pods, by shape index in mix.
	requests []*placement.Request
	// waiting counts the pods of each shape not yet bound.
	waiting []int
	fitter  placement.Fitter
}

// newBacklogView is a cluster of nodes × gpusPerNode idle GPUs, each
// shared by at most split containers, as createNodes publishes it, with no
// pod waiting.
func newBacklogView(nodes, gpusPerNode, split int, mix harness.Mix) (*backlogView, error) {
	v := &backlogView{
		mix: mix, names: make([]string, nodes), nodes: make(map[string]*placement.Node, nodes),
		requests: make([]*placement.Request, len(mix)), waiting: make([]int, len(mix)),
	}
	now := metav1.Now()
	for i := range nodes {
		name := harness.NodeName(i)
		gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: harness.GPUNodeStatus(name, gpusPerNode, split, now)}
		n := placement.NewNode(gn, nil)
		v.names[i], v.nodes[name] = name, &n
	}
	for s, shape := range mix {
		containers, err := gpurequest.PodRequests(harness.NewPod("shape", "", shape, harness.FormSlices), gpurequest.DefaultResourceNames())
		if err != nil {
			return nil, fmt.Errorf("reading shape %q as Tessera does: %w", shape.Name, err)
		}
		if v.requests[s], err = placement.NewRequest(containers, gpurequest.Selection{}, gpurequest.Binpack); err != nil {
			return nil, fmt.Errorf("shape %q: %w", shape.Name, err)
		}
	}
	return v, nil
}

// shapeIndex is the index in the view's mix of the shape named name, or -1.
func (v *backlogView) shapeIndex(name string) int {
	for i, s := range v.mix {
		if s.Name == name {
			return i
		}
	}
	return -1
}

// hold adds what a pod holds to its node; release takes it away.
func (v *backlogView) hold(node string, holds []placement.Hold) {
	if n, ok := v.nodes[node]; ok {
		n.Add(holds)
	}
}

func (v *backlogView) release(node string, holds []placement.Hold) {
	if n, ok := v.nodes[node]; ok {
		n.Remove(holds)
	}
}

// fitsWaiting reports whether a pod of some waiting shape fits the node.
func (v *backlogView) fitsWaiting(node string) bool {
	n, ok := v.nodes[node]
	if !ok {
		return false
	}
	for s, req := range v.requests {
		if v.waiting[s] > 0 && v.fitter.Feasible(n, req, nil) {
			return true
		}
	}
	return false
}

// bound counts a waiting pod of the shape as bound and reports whether it
// was the last of its shape.
func (v *backlogView) bound(shape int) (last bool) {
	if v.waiting[shape] == 0 {
		return false
	}
	v.waiting[shape]--
	return v.waiting[shape] == 0
}

// room is how much of one GPU a free gave back.
type room struct {
	memoryMiB int64
	cores     int32
}

// freedRoom is the room a pod's holds leave on its node's GPUs: its
// memory and cores, and the whole GPU where it held all the memory, since
// then nothing else can have been on it.
func (v *backlogView) freedRoom(node string, holds []placement.Hold) map[string]room {
	out := make(map[string]room, len(holds))
	n := v.nodes[node]
	for _, h := range holds {
		r := room{memoryMiB: h.MemoryMiB, cores: h.Cores}
		if n != nil {
			for _, d := range n.Devices {
				if d.UUID == h.UUID && h.MemoryMiB >= d.MemoryMiB {
					r.cores = d.Cores
				}
			}
		}
		out[h.UUID] = r
	}
	return out
}

// filledPod is one pod the bench places itself to fill the cluster.
type filledPod struct {
	shape      int
	node       string
	containers []gpuv1alpha1.ContainerAllocation
}

// fill places pods of the view's mix, in its interleaved order, until no
// shape fits any node: each on the first node from its turn (round robin)
// that fits it by Tessera's placement core, as the scale mode's placer
// does by its own rules. A shape that fits nowhere is skipped from then
// on, and a node once found too full for a shape is not tried for it
// again: filling only ever takes room.
func (v *backlogView) fill() []filledPod {
	full := make([][]bool, len(v.mix))
	for s := range full {
		full[s] = make([]bool, len(v.names))
	}
	fullShapes := 0
	done := make([]bool, len(v.mix))
	var out []filledPod
	// Every pod takes at least one share of a GPU: this is more than fit.
	limit := 0
	for _, n := range v.nodes {
		for _, d := range n.Devices {
			limit += int(d.ShareLimit)
		}
	}
	for _, shape := range v.mix.Sequence(limit) {
		if fullShapes == len(v.mix) {
			break
		}
		s := v.shapeIndex(shape.Name)
		if done[s] {
			continue
		}
		placed := false
		for k := range v.names {
			i := (len(out) + k) % len(v.names)
			if full[s][i] {
				continue
			}
			n := v.nodes[v.names[i]]
			containers, failure := placement.Fit(n, v.requests[s])
			if failure != nil {
				full[s][i] = true
				continue
			}
			n.Add(placement.Holds(containers))
			out = append(out, filledPod{shape: s, node: n.Name, containers: containers})
			placed = true
			break
		}
		if !placed {
			done[s] = true
			fullShapes++
		}
	}
	return out
}

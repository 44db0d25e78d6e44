package plugin

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/tessera-gpu/tessera/scheduler/fitgate"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/podrequest"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// whyNever words, for the nodes that Tessera's Filter found could never
// take the pod's GPUs (UnschedulableAndUnresolvable, so preemption passed
// them by), what no eviction changes there: most often that no GPU has
// the memory one container asks for, naming the largest.
func (p *Plugin) whyNever(pod *v1.Pod, req podrequest.Request, nodes []string) []string {
	asked := fitgate.MostMemoryMiB(req.Request)
	var (
		tooSmall, other int
		largest         placement.Device
		largestOn       string
	)
	// In order of name, so that of GPUs alike the same node is named.
	slices.Sort(nodes)
	p.view.Read(nodes, pod.UID, func(name string, n *view.Node) {
		var d *placement.Device
		if n != nil {
			d = placement.Largest(&n.Placement, req.Request)
		}
		if d == nil || d.MemoryMiB >= asked {
			other++
			return
		}
		tooSmall++
		if largestOn == "" || d.MemoryMiB > largest.MemoryMiB {
			largest, largestOn = *d, name
		}
	})
	var parts []string
	switch {
	case tooSmall == 1:
		parts = append(parts, fmt.Sprintf("no GPU on node %s has the %d MiB the pod asks for: the largest (%s) has %d MiB",
			largestOn, asked, largest.Model, largest.MemoryMiB))
	case tooSmall > 1:
		parts = append(parts, fmt.Sprintf("no GPU on %d nodes has the %d MiB the pod asks for: the largest (%s, on node %s) has %d MiB",
			tooSmall, asked, largest.Model, largestOn, largest.MemoryMiB))
	}
	if other > 0 {
		parts = append(parts, fmt.Sprintf("%d node(s) could not take the pod's GPUs even with no pods on them", other))
	}
	return parts
}

package view

import (
	"strings"

	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// arrange lays the named nodes out one after another in memory, in the
// order of names: the nodes themselves, their devices and their names. A
// filter call reads every node kube-scheduler lists, in its order, and
// reads them several times faster in a row than scattered: the informers
// deliver objects at their sync in no particular order, and the view
// makes its nodes as they come. Nodes not named stay where they are.
//
// It copies each node once per change to the view's set of nodes, so it
// costs about what one filter call does, then nothing until a node comes
// or goes.
func (v *View) arrange(names []string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.arranged == v.generation {
		return
	}
	moving := make([]*Node, 0, len(names))
	seen := make(map[*Node]struct{}, len(names))
	devices, nameBytes := 0, 0
	for _, name := range names {
		n := v.nodes[name]
		if n == nil {
			continue
		}
		if _, dup := seen[n]; dup {
			continue
		}
		seen[n] = struct{}{}
		moving = append(moving, n)
		devices += len(n.Placement.Devices)
		nameBytes += len(n.Placement.Name)
	}

	var b strings.Builder
	b.Grow(nameBytes)
	for _, n := range moving {
		b.WriteString(n.Placement.Name)
	}
	text := b.String()
	nodes := make([]Node, len(moving))
	deviceMemory := make([]placement.Device, 0, devices)
	for i, n := range moving {
		m := &nodes[i]
		*m = *n
		m.Placement.Name, text = text[:len(n.Placement.Name)], text[len(n.Placement.Name):]
		start := len(deviceMemory)
		deviceMemory = append(deviceMemory, n.Placement.Devices...)
		// Capped, so that a node given more devices later gets new memory
		// instead of its neighbour's.
		m.Placement.Devices = deviceMemory[start:len(deviceMemory):len(deviceMemory)]
		v.nodes[m.Placement.Name] = m
	}
	v.generation++
	v.arranged = v.generation
}

package drascore

import (
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// sliceGPUs keeps the GPUs of each of Tessera's ResourceSlices as
// placement sees them, without usage, so that a slice's devices are read
// once per version of the slice, not once per pod. It is safe for
// concurrent use.
type sliceGPUs struct {
	mu     sync.Mutex
	slices map[string]*gpuSlice
}

// gpuSlice is one version of one slice's GPUs.
type gpuSlice struct {
	resourceVersion string
	devices         []placement.Device
	// ids name the devices to kube-scheduler's claim tracker.
	ids []structured.DeviceID
	// parts are the instances of GPUs whose instances are made on demand,
	// and counters those GPUs' capacity, by counter set.
	parts    []migPart
	counters map[string]placement.Device
}

// nodeSlices returns, for each node in names (every node when names is
// nil), the GPUs of the newest generation of each of its pools as
// Tessera's driver publishes them in slices. Nodes with no such GPUs are
// left out.
func (c *sliceGPUs) nodeSlices(slices []*resourceapi.ResourceSlice, names map[string]bool) map[string][]*gpuSlice {
	newest := map[string]int64{}
	for _, s := range slices {
		if ours(s, names) {
			newest[s.Spec.Pool.Name] = max(newest[s.Spec.Pool.Name], s.Spec.Pool.Generation)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.slices == nil {
		c.slices = map[string]*gpuSlice{}
	}
	nodes := make(map[string][]*gpuSlice, len(names))
	// One array backs the nodes' lists, each capped at its one slice, as a
	// node mostly has: a node's second slice copies its list.
	backing := make([]*gpuSlice, 0, len(names))
	for _, s := range slices {
		if !ours(s, names) || s.Spec.Pool.Generation != newest[s.Spec.Pool.Name] {
			continue
		}
		g := c.slices[s.Name]
		if g == nil || g.resourceVersion != s.ResourceVersion {
			g = readSlice(s)
			c.slices[s.Name] = g
		}
		name := *s.Spec.NodeName
		if list, ok := nodes[name]; ok {
			nodes[name] = append(list, g)
			continue
		}
		backing = append(backing, g)
		nodes[name] = backing[len(backing)-1 : len(backing) : len(backing)]
	}
	c.forgetDeleted(slices)
	return nodes
}

// gpuNode fills n with the GPUs of a node's slices, with the usage consumed
// says the allocated claims hold on each, and on GPUs whose instances are
// made on demand the instances in allocated, reusing n's memory.
func gpuNode(n *placement.Node, name string, slices []*gpuSlice, consumed structured.ConsumedCapacityCollection, allocated sets.Set[structured.DeviceID]) {
	n.Name, n.Devices = name, n.Devices[:0]
	for _, g := range slices {
		for i, d := range g.devices {
			use(&d, consumed[g.ids[i]])
			n.Devices = append(n.Devices, d)
		}
	}
	addMadeOnDemand(n, slices, allocated)
}

// forgetDeleted forgets the slices not among those listed, once they are
// as many as those listed: slices of nodes that are no candidates for one
// pod stay for the next.
func (c *sliceGPUs) forgetDeleted(listed []*resourceapi.ResourceSlice) {
	if len(c.slices) <= 2*len(listed) {
		return
	}
	kept := make(map[string]*gpuSlice, len(listed))
	for _, s := range listed {
		if g, ok := c.slices[s.Name]; ok {
			kept[s.Name] = g
		}
	}
	c.slices = kept
}

// ours reports whether s is a slice of Tessera's driver on one of names,
// or on any node when names is nil.
func ours(s *resourceapi.ResourceSlice, names map[string]bool) bool {
	return s.Spec.Driver == gpuv1alpha1.DRADriverName && s.Spec.NodeName != nil && (names == nil || names[*s.Spec.NodeName])
}

// readSlice reads the GPUs of s.
func readSlice(s *resourceapi.ResourceSlice) *gpuSlice {
	g := &gpuSlice{resourceVersion: s.ResourceVersion, counters: readCounters(s.Spec.SharedCounters)}
	for i := range s.Spec.Devices {
		d := &s.Spec.Devices[i]
		id := structured.MakeDeviceID(s.Spec.Driver, s.Spec.Pool.Name, d.Name)
		if p, ok := readPart(d, id); ok {
			g.parts = append(g.parts, p)
			continue
		}
		g.devices = append(g.devices, gpuDevice(d))
		g.ids = append(g.ids, id)
	}
	return g
}

// gpuDevice is a published GPU as placement sees it: its attributes, and
// its capacities as what may be allocated. A GPU withdrawn from the slice
// (unhealthy, cordoned) is not there at all.
func gpuDevice(d *resourceapi.Device) placement.Device {
	g := placement.Device{
		UUID:       stringAttribute(d, gpuv1alpha1.DRAAttributeUUID),
		Index:      int32(intAttribute(d, gpuv1alpha1.DRAAttributeIndex, 0)),
		Model:      stringAttribute(d, gpuv1alpha1.DRAAttributeModel),
		NUMANode:   int32(intAttribute(d, gpuv1alpha1.DRAAttributeNUMANode, -1)),
		MIGProfile: stringAttribute(d, gpuv1alpha1.DRAAttributeMIGProfile),
		Healthy:    true,
	}
	if c, ok := d.Capacity[gpuv1alpha1.DRACapacityMemory]; ok {
		g.MemoryMiB = c.Value.Value() >> 20
	}
	if c, ok := d.Capacity[gpuv1alpha1.DRACapacityCores]; ok {
		g.Cores = int32(c.Value.Value())
	}
	if c, ok := d.Capacity[gpuv1alpha1.DRACapacityShares]; ok {
		g.ShareLimit = int32(c.Value.Value())
	}
	return g
}

// use sets what used, the capacity the allocated claims consume, takes of g.
func use(g *placement.Device, used structured.ConsumedCapacity) {
	if q := used[gpuv1alpha1.DRACapacityMemory]; q != nil {
		g.UsedMemoryMiB = mebibytes(*q)
	}
	if q := used[gpuv1alpha1.DRACapacityCores]; q != nil {
		g.UsedCores = int32(q.Value())
	}
	if q := used[gpuv1alpha1.DRACapacityShares]; q != nil {
		g.UsedShares = int32(q.Value())
	}
}

func stringAttribute(d *resourceapi.Device, name resourceapi.QualifiedName) string {
	if a, ok := d.Attributes[name]; ok && a.StringValue != nil {
		return *a.StringValue
	}
	return ""
}

func intAttribute(d *resourceapi.Device, name resourceapi.QualifiedName, unset int64) int64 {
	if a, ok := d.Attributes[name]; ok && a.IntValue != nil {
		return *a.IntValue
	}
	return unset
}

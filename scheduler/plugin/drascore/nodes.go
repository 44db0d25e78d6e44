package drascore

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/structured"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// gpuNodes returns, for each node in names, its GPUs as Tessera's driver
// publishes them in slices (the newest generation of each pool), with the
// usage consumed says the allocated claims hold on each. Nodes with no
// such GPUs are left out.
func gpuNodes(slices []*resourceapi.ResourceSlice, consumed structured.ConsumedCapacityCollection, names map[string]bool) map[string]*placement.Node {
	newest := map[string]int64{}
	for _, s := range slices {
		if ours(s, names) {
			newest[s.Spec.Pool.Name] = max(newest[s.Spec.Pool.Name], s.Spec.Pool.Generation)
		}
	}
	nodes := map[string]*placement.Node{}
	for _, s := range slices {
		if !ours(s, names) || s.Spec.Pool.Generation != newest[s.Spec.Pool.Name] {
			continue
		}
		name := *s.Spec.NodeName
		n, ok := nodes[name]
		if !ok {
			n = &placement.Node{Name: name}
			nodes[name] = n
		}
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			used := consumed[structured.MakeDeviceID(s.Spec.Driver, s.Spec.Pool.Name, d.Name)]
			n.Devices = append(n.Devices, gpuDevice(d, used))
		}
	}
	return nodes
}

// ours reports whether s is a slice of Tessera's driver on one of names.
func ours(s *resourceapi.ResourceSlice, names map[string]bool) bool {
	return s.Spec.Driver == gpuv1alpha1.DRADriverName && s.Spec.NodeName != nil && names[*s.Spec.NodeName]
}

// gpuDevice is a published GPU as placement sees it: its attributes, its
// capacities as what may be allocated, and what used consumes of them. A
// GPU withdrawn from the slice (unhealthy, cordoned) is not there at all.
func gpuDevice(d *resourceapi.Device, used structured.ConsumedCapacity) placement.Device {
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
	if q := used[gpuv1alpha1.DRACapacityMemory]; q != nil {
		g.UsedMemoryMiB = mebibytes(*q)
	}
	if q := used[gpuv1alpha1.DRACapacityCores]; q != nil {
		g.UsedCores = int32(q.Value())
	}
	if q := used[gpuv1alpha1.DRACapacityShares]; q != nil {
		g.UsedShares = int32(q.Value())
	}
	return g
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

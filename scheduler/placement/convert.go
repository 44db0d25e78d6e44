package placement

import (
	"slices"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// NewNode builds a node's view from its GPUNode, with no usage: healthy
// devices are those marked Healthy, cordoned ones those listed in the spec.
// The devices go into buf's memory where they fit, so that the caller
// decides where they lie. Apply the node's allocations with Add.
func NewNode(gn *gpuv1alpha1.GPUNode, buf []Device) Node {
	n := Node{Name: gn.Name, Devices: buf[:0]}
	for i := range gn.Status.Devices {
		d := &gn.Status.Devices[i]
		n.Devices = append(n.Devices, Device{
			UUID:       d.UUID,
			Index:      d.Index,
			Model:      d.Model,
			NUMANode:   d.NUMANode,
			MemoryMiB:  d.MemoryMiB,
			Cores:      d.Cores,
			ShareLimit: d.ShareLimit,
			Healthy:    d.Health == gpuv1alpha1.GPUHealthy,
			Cordoned:   slices.Contains(gn.Spec.CordonedDevices, d.UUID),
			MIG:        d.MIGGeometry,
		})
		if d.MIG != nil {
			n.Devices[len(n.Devices)-1].MIGProfile = d.MIG.Profile
		}
	}
	return n
}

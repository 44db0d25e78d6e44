package placement

import (
	"slices"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// Device is one GPU as the scheduler sees it: capacity from the GPUNode's
// status and spec, usage from the allocations placed on it.
type Device struct {
	// The fields are ordered so that none is padded: filtering reads
	// thousands of nodes' devices, and a smaller Device is faster.

	// UUID identifies the GPU.
	UUID string
	// Model is the GPU's product name.
	Model string
	// MIGProfile is set when the device is a MIG instance, such as
	// "1g.10gb": it goes whole to one container.
	MIGProfile string
	// MIG is set when the GPU makes MIG instances on demand: how it can
	// be cut. It is shared with the GPUNode and never changed.
	MIG *gpuv1alpha1.MIGGeometry
	// MemoryMiB is the memory that may be allocated.
	MemoryMiB int64
	// Index is the GPU's index on its node.
	Index int32
	// NUMANode is the NUMA node the GPU is attached to, -1 when unknown.
	NUMANode int32
	// Cores is the compute that may be allocated, 100 for one whole GPU
	// unless the device plugin scales cores.
	Cores int32
	// ShareLimit is how many containers may use the GPU at once.
	ShareLimit int32
	// Healthy is false when the GPU reported an error.
	Healthy bool
	// Cordoned is true when the administrator took the GPU out of placement.
	Cordoned bool

	// UsedSlices are the memory slices held by the MIG instances placed
	// on the GPU, one bit each.
	UsedSlices uint16
	// UsedMemoryMiB is the memory held by the pods placed on the GPU.
	UsedMemoryMiB int64
	// UsedCores is the compute held by the pods placed on the GPU.
	UsedCores int32
	// UsedShares is the number of containers holding the GPU at once.
	UsedShares int32
}

// Node is one node's devices and their usage.
type Node struct {
	// Name is the node's name.
	Name string
	// Devices are the node's GPUs. Placement looks at no more than
	// MaxDevices of them; a node with more never fits.
	Devices []Device
}

// Add applies a pod's holds to the node's usage. Holds on GPUs the node does
// not have are ignored.
func (n *Node) Add(holds []Hold) {
	for _, h := range holds {
		if d := n.device(h.UUID); d != nil {
			d.UsedMemoryMiB += h.MemoryMiB
			d.UsedCores += h.Cores
			d.UsedShares += h.Shares
			d.UsedSlices |= h.Slices
		}
	}
}

// With returns a copy of the node with the holds added; the node is
// left as it is.
func (n *Node) With(holds []Hold) *Node {
	c := &Node{Name: n.Name, Devices: slices.Clone(n.Devices)}
	c.Add(holds)
	return c
}

// Remove undoes Add. Holds on GPUs the node does not have are ignored, and
// usage never goes below zero, so removing a pod twice does no harm beyond
// the first removal.
func (n *Node) Remove(holds []Hold) {
	for _, h := range holds {
		if d := n.device(h.UUID); d != nil {
			d.UsedMemoryMiB = max(d.UsedMemoryMiB-h.MemoryMiB, 0)
			d.UsedCores = max(d.UsedCores-h.Cores, 0)
			d.UsedShares = max(d.UsedShares-h.Shares, 0)
			d.UsedSlices &^= h.Slices
		}
	}
}

// device returns the device with the given UUID, or nil.
func (n *Node) device(uuid string) *Device {
	for i := range n.Devices {
		if n.Devices[i].UUID == uuid {
			return &n.Devices[i]
		}
	}
	return nil
}

// FreeMemoryMiB is the memory of the node's healthy, uncordoned devices
// that no pod holds.
func (n *Node) FreeMemoryMiB() int64 {
	var free int64
	for i := range n.Devices {
		d := &n.Devices[i]
		if d.Healthy && !d.Cordoned {
			free += max(d.MemoryMiB-d.UsedMemoryMiB, 0)
		}
	}
	return free
}

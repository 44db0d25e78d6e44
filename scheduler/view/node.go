package view

import (
	"slices"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// Node is one node as the view knows it.
type Node struct {
	// Placement is the node's GPUs with the usage of the pods on it.
	Placement placement.Node
	// HasGPUNode is false when the node has no GPUNode, or it was deleted:
	// the view keeps the node only for the pods still holding GPUs there.
	HasGPUNode bool
	// NotReady says why the GPUNode's Ready condition is False or
	// Unknown, if it is.
	NotReady string
	// NoHAMiCore says why the node's HAMi-core library, which enforces
	// GPU slices' limits, is missing, when the device plugin reports it
	// missing.
	NoHAMiCore string

	pods map[types.UID]*Pod
	// renewed is when the node's Lease was last seen renewed, in Unix
	// nanoseconds; 0 when the node has none. The view shares it with the
	// Lease, and it changes without the view's lock.
	renewed *atomic.Int64
}

// Renewed returns when the scheduler last saw the node's device plugin
// renew its Lease, its heartbeat, by the scheduler's clock; zero when it
// has none.
func (n *Node) Renewed() time.Time {
	if n.renewed == nil {
		return time.Time{}
	}
	return unixNano(n.renewed.Load())
}

// unixNano is the time of ns Unix nanoseconds, with 0 for none.
func unixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// rebuild recomputes usage from the pods' holds, after the devices changed.
func (n *Node) rebuild() {
	for i := range n.Placement.Devices {
		d := &n.Placement.Devices[i]
		d.UsedMemoryMiB, d.UsedCores, d.UsedShares, d.UsedSlices = 0, 0, 0, 0
	}
	for _, p := range n.pods {
		n.Placement.Add(p.holds)
	}
}

// Pods returns the number of pods holding GPUs on the node.
func (n *Node) Pods() int { return len(n.pods) }

// without returns a copy of the node with the pod's holds taken off. The
// copy shares the node's pods, for Holds, and must not change them.
func (n *Node) without(p *Pod) *Node {
	c := *n
	c.Placement.Devices = append([]placement.Device(nil), n.Placement.Devices...)
	c.Placement.Remove(p.holds)
	return &c
}

// Without returns a copy of the node's GPUs with the holds of the pods
// for which gone is true taken off: the node as it would be without them.
// It runs under the view's read lock (in Read's fn), so that the holds it
// takes off are those the view still counts.
func (n *Node) Without(gone func(types.UID) bool) *placement.Node {
	c := placement.Node{Name: n.Placement.Name, Devices: slices.Clone(n.Placement.Devices)}
	for uid, p := range n.pods {
		if gone(uid) {
			c.Remove(p.holds)
		}
	}
	return &c
}

// EachPod calls fn for every pod holding GPUs on the node. fn must not keep
// or change the pod.
func (n *Node) EachPod(fn func(p *Pod)) {
	for _, p := range n.pods {
		fn(p)
	}
}

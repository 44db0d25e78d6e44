package dra

import "github.com/tessera-gpu/tessera/deviceplugin/metrics"

// What the node's GPUs hold in DRA mode is what the driver has prepared:
// the claims of the pods the kubelet started here. The checkpoint records
// each claim's consumed capacity per GPU, so the GPUNode and the metrics
// read it from there, and a node daemon never watches the cluster's
// claims: its cost follows its own pods, not the cluster's size. A claim
// kube-scheduler allocated shows once the kubelet prepares it, as its pod
// starts.

// ByUUID returns what the prepared claims hold of each GPU, by UUID.
func (d *Driver) ByUUID() map[string]metrics.Usage {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]metrics.Usage{}
	for uuid, u := range d.used() {
		out[uuid] = metrics.Usage{MemoryBytes: u.memoryMiB * mebibyte, Cores: u.cores, Shares: u.shares}
	}
	return out
}

// MemoryMiB returns the memory in MiB the prepared claims hold of each
// GPU, by UUID.
func (d *Driver) MemoryMiB() map[string]int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]int64{}
	for uuid, u := range d.used() {
		out[uuid] = u.memoryMiB
	}
	return out
}

// Changed returns a channel that is closed when the prepared claims next
// change.
func (d *Driver) Changed() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.changed
}

// notify wakes those waiting on Changed; d.mu is held.
func (d *Driver) notify() {
	close(d.changed)
	d.changed = make(chan struct{})
}

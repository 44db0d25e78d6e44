// Package inflight keeps at most one GPU allocation per node in flight:
// bound to the node but not yet served by the node's device plugin. The
// kubelet's Allocate call does not say which pod it is for, so the device
// plugin can only tell pods apart when one at a time is pending. A bind to a
// node that has an allocation in flight waits in a per-node FIFO queue.
package inflight

// Package freememory publishes each node's free GPU memory on its GPUNode,
// where kubectl get gpunodes shows it.
//
// Only the extender knows every allocation, including those bound a moment
// ago, so it writes the one status field (status.freeMemoryMiB) that the
// device plugin leaves alone. A write per allocation would add a custom
// resource write, the dearest kind the control plane serves, to every pod
// scheduled and every pod that ends. Instead the extender compares its view
// with the GPUNodes every Interval and writes only the nodes whose free
// memory changed, at most MaxWrites of them a round: a burst of pods on one
// node costs one write, and however busy the cluster, these writes cost the
// API server no more than MaxWrites per Interval.
package freememory

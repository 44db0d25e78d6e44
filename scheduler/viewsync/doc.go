// Package viewsync builds, once for every front end of the scheduler (the
// extender and the kube-scheduler plugin), what keeps the placement view in
// step with the API: the clients, the informers on GPUNodes,
// GPUAllocations, the profile's pods and the nodes' Leases, the tracker
// that feeds the view from them, the one-pod-per-node gate, the liveness
// marker, the free-memory publisher, and the per-GPU state metrics read
// from the view. A front end only translates between its caller and the
// view; it wires none of this itself.
package viewsync

// Package placement is Tessera's placement engine: it decides whether a pod's
// GPU containers fit on a node's GPUs, which GPUs they get, and how good a
// node is for them. It is pure computation over an in-memory view of the
// node (Node and Device) and knows nothing of the Kubernetes API, so the
// scheduler extender can call it for every candidate node under its own lock.
//
// The rules are those of DESIGN.md, "Requests and placement rules": a
// container's request is fit onto Count distinct GPUs of one node; a GPU fits
// when it is healthy, not cordoned, passes the pod's type and UUID filters,
// has a free share, enough free memory and enough free cores; a request for
// 100 cores takes the GPU alone; a GPU whose cores are fully taken accepts no
// request, not even one for zero cores; with NUMA binding all of one
// container's GPUs share a NUMA node. Containers of one pod may share a GPU,
// and the pod's containers run in phases (see Holds), each of which must fit.
package placement

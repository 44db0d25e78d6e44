// Package drascore is TesseraDRA, the kube-scheduler score plugin that
// tessera-scheduler runs beside DynamicResources in DRA mode, so that the
// node policies (binpack, spread) and the pod's override hold there as in
// extender and plugin mode.
//
// DynamicResources still filters the nodes and allocates the devices
// (first fit within the node). TesseraDRA only ranks the nodes that pass:
// in PreScore it reads the pod's unallocated claims of Tessera's device
// classes into a placement request, one container request per claim
// request (its count and its memory and cores capacity requests), with
// the GPU type, UUID, MIG and NUMA rules of the pod's annotations; it
// builds each candidate node's GPUs from the node's ResourceSlices of
// driver gpu.tessera.dev, and their usage from the capacity the allocated
// claims consume, as kube-scheduler's claim tracker gathers it (claims in
// flight included). Score places the request on each node with
// placement's Fitter and returns the load it would leave; NormalizeScore
// ranks the loads by the node policy with nodescore, as the other modes do.
// The slices and claims are kube-scheduler's.
//
// At PreFilter and Filter it holds the namespace's GPU quota (package
// quota) in DRA mode: what the namespace's allocated claims consume, each
// device one GPU, plus what the pod's claims would get on the node, must
// fit the limits, in quota.Limits.Exceeded's words. kube-scheduler retries
// a pod it turned away when a claim of the namespace is freed (a
// registered event); a ResourceQuota, which kube-scheduler does not
// watch, activates the namespace's pods through the plugin's informer.
//
// At PostFilter, when no node could ever hold the pod's claims, not even
// with its GPUs free, it says why in placement's words, as the other
// modes do; DynamicResources says only that it cannot allocate them.
package drascore

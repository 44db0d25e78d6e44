// Package allocator answers the kubelet's Allocate and
// GetPreferredAllocation calls from the node's in-flight GPUAllocation.
//
// The kubelet's request does not say which pod it is for. The scheduler
// extender lets only one pod per node be in flight (bound, allocation not
// yet Allocated), so the node's one Pending GPUAllocation is the pod being
// admitted, and its next unserved container, in the kubelet's order (init
// containers first), is the container asked for.
package allocator

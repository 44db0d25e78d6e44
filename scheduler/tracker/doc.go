// Package tracker keeps the extender's view and in-flight gate in step with
// the API: it feeds them from informers on GPUNodes, GPUAllocations and
// pods, frees GPUs when pods end or allocations fail, and deletes
// GPUAllocations whose pod is gone. It tells the requeuers when GPUs may
// have become free on a node, and when a namespace's GPU quota may have
// room: its pods gave GPUs back, or a ResourceQuota of it changed or went.
package tracker

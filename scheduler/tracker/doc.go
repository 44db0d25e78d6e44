// Package tracker keeps the extender's view and in-flight gate in step with
// the API: it feeds them from informers on GPUNodes, GPUAllocations and
// pods, frees GPUs when pods end or allocations fail, and deletes
// GPUAllocations whose pod is gone.
package tracker

// Package extender answers kube-scheduler's extender calls: filter and
// prioritize read the view, bind reserves GPUs in it, writes the pod's
// GPUAllocation and binds the pod, one in-flight allocation per node.
package extender

// Package v1alpha1 holds Tessera's GPU API: GPUNode, the GPUs of one node,
// and GPUAllocation, the GPUs given to one pod.
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +groupName=gpu.tessera.dev
package v1alpha1

// Package v1alpha1 holds Tessera's GPU API: GPUNode, the GPUs of one node,
// and GPUAllocation, the GPUs given to one pod.
// Beside them are the other contracts between Tessera's daemons and its
// users: the names the DRA driver publishes GPUs under (dra.go) and the
// namespace of the nodes' Leases, their heartbeats (nodelease.go).
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +groupName=gpu.tessera.dev
package v1alpha1

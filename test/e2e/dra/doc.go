// Package dra tests Tessera's DRA mode end to end: a real etcd,
// kube-apiserver, kube-controller-manager with the resourceclaim controller
// and stock kube-scheduler with its DynamicResources plugin (no extender),
// or tessera-scheduler with the shipped DRA configuration for the GPU
// quota;
// node daemons in DRA mode on simulated GPU nodes, publishing their GPUs
// as ResourceSlices; and node agents playing the kubelet's DRA side, which
// call the daemons' NodePrepareResources over their gRPC sockets for every
// pod bound to their node.
package dra

// Package kueue tests Tessera under a real Kueue end to end: a real etcd,
// kube-apiserver and kube-controller-manager with the workload
// controllers, Kueue's controller manager built from the module proxy
// (hack/build-kueue.sh) with the shipped configuration and the example
// teams' queues of deploy/examples/kueue, Tessera's extender and webhook in
// process, kube-scheduler started with
// deploy/scheduler/kube-scheduler-config.yaml, and a goroutine playing the
// nodes' kubelets. Jobs, Deployments and plain pods are queued, admitted
// and placed, and the GPU accounting invariants hold at the end.
package kueue

// Package kueue tests Tessera under a real Kueue end to end: a real etcd,
// kube-apiserver and kube-controller-manager with the workload
// controllers, Kueue's controller manager built from the module proxy
// (hack/build-kueue.sh) with the shipped configuration and the example
// teams' queues of deploy/examples/kueue, and Tessera's extender in process
// behind kube-scheduler started with deploy/scheduler/kube-scheduler-config.yaml.
package kueue

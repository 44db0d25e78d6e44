// Package scheduler tests Tessera's scheduler extender end to end: a real
// etcd, kube-apiserver, kube-controller-manager and kube-scheduler started
// with deploy/scheduler/kube-scheduler-config.yaml, the extender running in
// process, and a goroutine playing the device plugin of every node.
package scheduler

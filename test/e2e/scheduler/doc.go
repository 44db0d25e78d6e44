// Package scheduler tests Tessera's scheduling end to end: a real etcd,
// kube-apiserver, kube-controller-manager and a goroutine playing the
// device plugin of every node, with either kube-scheduler started with
// deploy/scheduler/kube-scheduler-config.yaml and the extender running in
// process (TestExtender), or tessera-scheduler started with
// deploy/scheduler/tessera-scheduler-config.yaml (TestPlugin). Both run
// one table of scenarios; plugin mode adds preemption by GPU slices, and
// extender mode what its preempt verb can and cannot do.
package scheduler

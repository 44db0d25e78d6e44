// Package gangplace decides where a gang of GPU pods goes as a whole, for
// kube-scheduler's pod group cycle in tessera-scheduler
// (scheduler/plugin): Candidates proposes the few sets of the fewest nodes
// that could hold every pod of the gang by their GPUs, and Judge says what
// placing the gang's pods on their nodes does to the cluster: how many
// nodes they take and how many fragments (GPUs left partly held) they
// leave. What fits is scheduler/placement's to say and what is where the
// view's, so a gang is judged by the same rules as each of its pods.
package gangplace

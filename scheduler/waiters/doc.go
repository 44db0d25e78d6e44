// Package waiters holds the GPU pods that wait to be scheduled in
// kube-scheduler's queue order, and releases only those that GPUs freed
// on a node could serve, as many as the room holds. It is the fit gate's
// memory in every mode: tessera-scheduler's gates activate pods through
// kube-scheduler's framework, and the extender's fit gate lifts their
// scheduling gate.
package waiters

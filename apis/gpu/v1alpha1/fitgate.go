package v1alpha1

// FitSchedulingGate is the scheduling gate that Tessera's admission
// webhook puts on the GPU pods of an extender-mode scheduler, when the
// fit gate is on, and that the extender takes off once some live node
// could hold the pod's GPUs and the pods ahead of it in the queue leave it
// room. kube-scheduler does not try a gated pod, so a pod that fits
// nowhere costs it no scheduling cycle while a freed GPU waits behind it.
// `kubectl get pods` shows such a pod as SchedulingGated, and its
// PodScheduled condition says what it waits for.
const FitSchedulingGate = "gpu.tessera.dev/fit"

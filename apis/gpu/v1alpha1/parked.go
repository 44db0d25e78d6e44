package v1alpha1

// ParkedLabel marks a pending pod that tessera-scheduler's fit gate holds
// outside kube-scheduler's queue: no live node could hold its GPUs now.
// tessera-scheduler keeps such pods from kube-scheduler's pod handlers,
// so that kube-scheduler neither holds them in its queue nor walks them on
// every pod event, and takes the label off when GPUs free for the pod. `kubectl get pods -l gpu.tessera.dev/parked` lists them. Only the
// scheduler sets it: it takes it off any pod it does not hold.
const ParkedLabel = "gpu.tessera.dev/parked"

package v1alpha1

// BindAnnotation, on a GPUAllocation, names the bind that wrote it: the
// token of the room the scheduler reserved for that bind. A pod whose bind
// was cut short (kube-apiserver restarted mid-request, the answer lost)
// can be reserved again, elsewhere, before the scheduler sees the
// allocation the cut-short bind left; the token tells that allocation
// from the new bind's own, so the new reservation stays counted until its
// own allocation takes its place. Only the scheduler sets it.
const BindAnnotation = "gpu.tessera.dev/bind"

package v1alpha1

// Gang-fit admission is a Kueue AdmissionCheck that Tessera's scheduler
// serves: an AdmissionCheck whose spec.controllerName is
// GangFitControllerName lets a Workload in only when all of its pods fit
// the GPUs as they are, and the scheduler then holds that room for them.
// Kueue hands the pods GangHoldAnnotation through the check's
// podSetUpdates, which is how the scheduler knows each pod's held room.
const (
	// GangFitControllerName is the controllerName of the AdmissionChecks
	// the scheduler serves.
	GangFitControllerName = "gpu.tessera.dev/gang-fit"
	// GangHoldAnnotation names, on a pod, the room held for it: its
	// Workload's UID and its pod set's name, "<uid>/<pod set>".
	GangHoldAnnotation = "gpu.tessera.dev/gang-hold"
)

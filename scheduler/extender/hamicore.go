package extender

// HAMiCorePolicy is what the extender does with a pod asking for GPU
// slices on a node whose device plugin reports the HAMi-core library
// missing, so that the slices' limits would not be enforced there.
type HAMiCorePolicy string

const (
	// HAMiCoreRefuse keeps such pods off the node, with the reason.
	HAMiCoreRefuse HAMiCorePolicy = "Refuse"
	// HAMiCoreWarn places them and records a warning event on the pod.
	HAMiCoreWarn HAMiCorePolicy = "Warn"
)

// HAMiCorePolicies are the supported policies.
func HAMiCorePolicies() []HAMiCorePolicy { return []HAMiCorePolicy{HAMiCoreRefuse, HAMiCoreWarn} }

// ReasonLimitsNotEnforced is the warning event of a pod placed under
// HAMiCoreWarn on a node without HAMi-core.
const ReasonLimitsNotEnforced = "GPULimitsNotEnforced"

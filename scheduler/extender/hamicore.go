package extender

import (
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

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

// unenforced returns why the node cannot enforce the pod's GPU slices, or
// "" when it can or the pod asks for none.
func unenforced(n *view.Node, req *placement.Request) string {
	if n == nil || n.NoHAMiCore == "" || !asksForSlices(req) {
		return ""
	}
	return "HAMi-core is missing, so GPU slice limits cannot be enforced: " + n.NoHAMiCore
}

// asksForSlices reports whether a container asks for a memory or compute
// limit: a part of a GPU, which only HAMi-core enforces. Whole GPUs need
// no library.
func asksForSlices(req *placement.Request) bool {
	for i := range req.Containers {
		c := &req.Containers[i]
		if c.MemoryMiB > 0 || (c.MemoryPercent > 0 && c.MemoryPercent < gpurequest.MaxPercent) ||
			(c.Cores > 0 && c.Cores < gpurequest.MaxPercent) {
			return true
		}
	}
	return false
}

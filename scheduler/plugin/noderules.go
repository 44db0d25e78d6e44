package plugin

import (
	"time"

	"github.com/tessera-gpu/tessera/scheduler/extender"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// nodeRules are what keep a node from taking a GPU pod whatever its GPUs'
// usage, as the extender applies them: Filter and the requeuer
// must agree on them.
type nodeRules struct {
	// heartbeatMaxAge is the oldest device-plugin heartbeat a node may
	// have to take new pods.
	heartbeatMaxAge time.Duration
	// hamiCoreMissing is what happens to pods asking for GPU slices on a
	// node without HAMi-core.
	hamiCoreMissing extender.HAMiCorePolicy
}

// closed says why the node takes no pod with the request, even with none
// of its GPUs in use; "" when it may. n may be nil.
func (r nodeRules) closed(n *view.Node, now time.Time, req *placement.Request) string {
	if reason := n.Unavailable(now, r.heartbeatMaxAge); reason != "" {
		return reason
	}
	if reason := n.Unenforced(req); reason != "" && r.hamiCoreMissing != extender.HAMiCoreWarn {
		return reason
	}
	return ""
}

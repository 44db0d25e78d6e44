package view

import (
	"fmt"
	"time"

	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// Unavailable says why the node takes no new GPU pods at all, or "" when it
// may: it has no GPUNode, its Lease (its device plugin's heartbeat) is
// missing or was last seen renewed longer than heartbeatMaxAge before now,
// both by the scheduler's clock, or its device plugin is not ready.
// Evicting pods would not help such a node. n may be nil, for a node the
// view does not know.
func (n *Node) Unavailable(now time.Time, heartbeatMaxAge time.Duration) string {
	if n == nil || !n.HasGPUNode {
		return "node has no GPUNode: no Tessera device plugin reports its GPUs"
	}
	renewed := n.Renewed()
	switch {
	case renewed.IsZero():
		return "device plugin has sent no heartbeat: the node has no Lease"
	case now.Sub(renewed) > heartbeatMaxAge:
		return fmt.Sprintf("device plugin heartbeat is stale (Lease last renewed %s ago)", roughly(now.Sub(renewed)))
	case n.NotReady != "":
		return "device plugin is not ready: " + n.NotReady
	}
	return ""
}

// roughly rounds an age down to the second, or to the minute past a minute,
// so that kube-scheduler, which counts nodes by identical reason, can group
// nodes whose device plugins stopped at about the same time.
func roughly(d time.Duration) time.Duration {
	if d >= time.Minute {
		return d.Truncate(time.Minute)
	}
	return d.Truncate(time.Second)
}

// Unenforced returns why the node cannot enforce the request's GPU slices
// (its device plugin reports the HAMi-core library missing), or "" when it
// can or the request asks for none. n may be nil.
func (n *Node) Unenforced(req *placement.Request) string {
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

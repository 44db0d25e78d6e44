package view

import (
	"fmt"
	"time"

	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// Reason is why a node does not take a pod, in words for the pod's events
// and kube-scheduler's status. The empty Reason means it does: see OK.
type Reason string

// OK reports whether r is no reason at all: the node may take the pod.
func (r Reason) OK() bool { return r == "" }

// Unavailable says why the node takes no new GPU pods at all, or an OK
// Reason when it may: it has no GPUNode, its Lease (its device plugin's heartbeat) is
// missing or was last seen renewed longer than heartbeatMaxAge before now,
// both by the scheduler's clock, or its device plugin is not ready.
// Evicting pods would not help such a node. n may be nil, for a node the
// view does not know.
func (n *Node) Unavailable(now time.Time, heartbeatMaxAge time.Duration) Reason {
	if n == nil || !n.HasGPUNode {
		return "node has no GPUNode: no Tessera device plugin reports its GPUs"
	}
	renewed := n.Renewed()
	switch {
	case renewed.IsZero():
		return "device plugin has sent no heartbeat: the node has no Lease"
	case now.Sub(renewed) > heartbeatMaxAge:
		return Reason(fmt.Sprintf("device plugin heartbeat is stale (Lease last renewed %s ago)", roughly(now.Sub(renewed))))
	case n.NotReady != "":
		return Reason("device plugin is not ready: " + n.NotReady)
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
// (its device plugin reports the HAMi-core library missing), or an OK
// Reason when it can or the request asks for none. n may be nil.
func (n *Node) Unenforced(req *placement.Request) Reason {
	if n == nil || n.NoHAMiCore == "" || !asksForSlices(req) {
		return ""
	}
	return Reason("HAMi-core is missing, so GPU slice limits cannot be enforced: " + n.NoHAMiCore)
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

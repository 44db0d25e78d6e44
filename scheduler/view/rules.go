package view

import (
	"time"

	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// HAMiCorePolicy is what the scheduler does with a pod asking for GPU
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

// Rules are what keep a node from taking a GPU pod whatever its GPUs'
// usage. Every front end admits a pod to a node in one order: a node that
// is unavailable takes nothing; one that cannot enforce the request's
// slices takes it only under HAMiCoreWarn; only then is the request fitted
// on the node's GPUs, as each front end holds them (the view, a scheduling
// cycle's changes, the GPUs without preemption's victims). Closed is the
// first two steps, so that filter, bind, preemption and the requeuers of
// every mode agree on them.
type Rules struct {
	// HeartbeatMaxAge is the oldest device-plugin heartbeat a node may
	// have to take new pods.
	HeartbeatMaxAge time.Duration
	// HAMiCoreMissing is what happens to pods asking for GPU slices on a
	// node without HAMi-core; anything but HAMiCoreWarn refuses them.
	HAMiCoreMissing HAMiCorePolicy
}

// Unavailable says why n takes no new GPU pods at all (see
// Node.Unavailable), under the rules' heartbeat age. n may be nil.
func (r Rules) Unavailable(n *Node, now time.Time) Reason {
	return n.Unavailable(now, r.HeartbeatMaxAge)
}

// Closed says why n takes no pod with req, even with none of its GPUs in
// use: it is unavailable, or it cannot enforce req's slices and the policy
// refuses them. Where the policy lets such a pod on, warning says why its
// limits would not be enforced there, for the event the pod gets when it
// is placed. n may be nil.
func (r Rules) Closed(n *Node, now time.Time, req *placement.Request) (closed, warning Reason) {
	if reason := r.Unavailable(n, now); !reason.OK() {
		return reason, ""
	}
	if reason := n.Unenforced(req); !reason.OK() {
		if r.HAMiCoreMissing != HAMiCoreWarn {
			return reason, ""
		}
		return "", reason
	}
	return "", ""
}

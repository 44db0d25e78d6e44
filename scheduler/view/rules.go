package view

import (
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/quota"
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
// slices takes it only under HAMiCoreWarn; no node takes a pod whose
// namespace's GPU quota has no room for the least it asks; only then is
// the request fitted on the node's GPUs, as each front end holds them (the
// view, a scheduling cycle's changes, the GPUs without preemption's
// victims); and last the GPUs it gets there must fit the quota. Closed is
// the first two steps, and Quota the quota's two, so that filter, bind,
// preemption and the requeuers of every mode agree on them.
type Rules struct {
	// HeartbeatMaxAge is the oldest device-plugin heartbeat a node may
	// have to take new pods.
	HeartbeatMaxAge time.Duration
	// HAMiCoreMissing is what happens to pods asking for GPU slices on a
	// node without HAMi-core; anything but HAMiCoreWarn refuses them.
	HAMiCoreMissing HAMiCorePolicy
	// Quotas tell the namespaces' GPU limits; nil enforces none.
	Quotas quota.Source
	// CoresResource is the resource pods state GPU compute with, which a
	// quota on compute requires of every GPU slice.
	CoresResource corev1.ResourceName
}

// Limits returns the namespace's GPU limits, none without Quotas.
func (r Rules) Limits(namespace string) quota.Limits {
	if r.Quotas == nil {
		return quota.Limits{}
	}
	return r.Quotas.Limits(namespace)
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

// Fit returns the FitFunc of a reservation by the rules' order, for
// View.ReserveWithin, which then checks the quota: a closed node refuses
// the request, and only then is it fitted on the node's GPUs as the view
// holds them. A placement failure is worded of subject (see
// placement.Failure.Of). Where the policy lets the pod on a node that
// cannot enforce its slices, warning is set to why.
func (r Rules) Fit(now time.Time, req *placement.Request, subject string, warning *Reason) FitFunc {
	return func(n *Node) ([]gpuv1alpha1.ContainerAllocation, error) {
		closed, unenforced := r.Closed(n, now, req)
		if !closed.OK() {
			return nil, errors.New(string(closed))
		}
		assignment, failure := placement.Fit(&n.Placement, req)
		if failure != nil {
			return nil, errors.New(failure.Of(subject))
		}
		*warning = unenforced
		return assignment, nil
	}
}

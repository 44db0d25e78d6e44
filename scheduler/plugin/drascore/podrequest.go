package drascore

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// podRequests reads the pod's unallocated claims of Tessera's classes as
// the placement requests to try on each node, best first (see
// candidates), and the pod's node policy. The status is Skip for a pod
// with no such claim, or one placement cannot take.
func (p *Plugin) podRequests(ctx context.Context, pod *v1.Pod) ([]*placement.Request, gpurequest.Policy, *fwk.Status) {
	choices, err := claimRequests(pod, p.dra.ResourceClaims(), p.args.DeviceClasses)
	if err != nil {
		return nil, "", fwk.AsStatus(err)
	}
	if len(choices) == 0 {
		return nil, "", fwk.NewStatus(fwk.Skip)
	}
	logger := klog.FromContext(ctx)
	// The webhook leaves a HAMi-style pod's annotations as they were, and
	// they steer placement as in the other modes; a pod whose annotations
	// do not parse is ranked by the defaults.
	sel, err := gpurequest.ParseAnnotations(pod.Annotations)
	if err != nil {
		logger.V(4).Info("Scoring by the default policies: the pod's GPU annotations do not parse", "pod", klog.KObj(pod), "err", err)
		sel = gpurequest.Selection{}
	}
	nodePolicy := sel.NodePolicy
	if nodePolicy == "" {
		nodePolicy = p.args.DefaultNodePolicy
	}
	var requests []*placement.Request
	for _, containers := range candidates(choices) {
		req, err := placement.NewRequest(containers, sel, p.args.DefaultGPUPolicy)
		if err != nil {
			logger.V(4).Info("Not scoring the pod's GPUs: placement cannot take its claims", "pod", klog.KObj(pod), "err", err)
			return nil, "", fwk.NewStatus(fwk.Skip)
		}
		requests = append(requests, req)
	}
	return requests, nodePolicy, nil
}

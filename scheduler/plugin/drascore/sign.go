package drascore

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

var _ fwk.SignPlugin = (*Plugin)(nil)

// SignPod lets kube-scheduler reuse one pod's scores for the next pod of
// the same signature (opportunistic batching) when the pod has no claims,
// which the plugin does not score; a pod with claims is scored by them
// and by the claims the pods before it were allocated, so it is never
// signed, nor does DynamicResources sign it. Without SignPod the
// scheduler would batch no pod at all.
func (p *Plugin) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	if len(pod.Spec.ResourceClaims) > 0 {
		return nil, fwk.NewStatus(fwk.Unschedulable, "pods with claims are not signable")
	}
	return nil, nil
}

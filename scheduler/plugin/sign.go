package plugin

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/fitgate"
)

var _ fwk.SignPlugin = (*Plugin)(nil)

// Keys of the plugin's signature fragments.
const (
	// requestSignerName is the pod's GPU request as placement reads it:
	// containers, the annotations' selection and MIG mode, the GPU and
	// node policies.
	requestSignerName = "v1.Pod.TesseraGPURequest()"
	// namespaceSignerName is the namespace, whose GPU quota Filter and
	// Reserve apply.
	namespaceSignerName = "v1.Pod.Namespace"
)

// gpuSignature is the value of the request fragment.
type gpuSignature struct {
	Shape      string `json:"shape"`
	NodePolicy string `json:"nodePolicy"`
}

// SignPod lets kube-scheduler reuse the nodes it filtered and scored for
// one pod for the next pod of the same signature (opportunistic
// batching); without it the scheduler batches no pod at all. Which nodes
// Filter passes, and how Score ranks them, depend on the pod only through
// its GPU request and its namespace's quota (its priority changes only
// why a node fails), and kube-scheduler filters the node it reuses again
// before it takes it, as Reserve fits the pod again, so a reused node
// never over-commits a GPU. Pods whose answer depends on who they are are
// not signed: a gang's pods, placed in room held for the gang; a pod that
// already holds GPUs, which it is placed without; a pod nominated by
// preemption.
func (p *Plugin) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	if pod.Spec.SchedulingGroup != nil || pod.Annotations[gpuv1alpha1.GangHoldAnnotation] != "" {
		return nil, fwk.NewStatus(fwk.Unschedulable, "a gang's pods are not signable")
	}
	if pod.Status.NominatedNodeName != "" {
		return nil, fwk.NewStatus(fwk.Unschedulable, "nominated pods are not signable")
	}
	req, err := p.parser.Parse(pod)
	if err != nil {
		return nil, fwk.NewStatus(fwk.Unschedulable, "pods with an invalid GPU request are not signable")
	}
	if len(req.Containers) == 0 {
		// The plugin skips the pod.
		return nil, nil
	}
	if _, holding := p.view.Pod(pod.UID); holding {
		return nil, fwk.NewStatus(fwk.Unschedulable, "pods that hold GPUs are not signable")
	}
	return []fwk.SignFragment{
		{Key: requestSignerName, Value: gpuSignature{Shape: fitgate.ShapeKey(req.Request), NodePolicy: string(req.NodePolicy)}},
		{Key: namespaceSignerName, Value: pod.Namespace},
	}, nil
}

package podrequest

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// Request is a pod's GPU request, resolved for placement.
type Request struct {
	*placement.Request
	// NodePolicy ranks nodes: the pod's annotation or the configured default.
	NodePolicy gpurequest.Policy
}

// Parser reads pods' GPU requests.
type Parser struct {
	// ResourceNames are the resources pods ask for GPU slices with.
	ResourceNames gpurequest.ResourceNames
	// DefaultNodePolicy and DefaultGPUPolicy apply to pods without a
	// policy annotation.
	DefaultNodePolicy gpurequest.Policy
	DefaultGPUPolicy  gpurequest.Policy
}

// Parse reads a pod's GPU request. The error names the pod's invalid fields.
// A pod that asks for no GPUs has a request with no containers.
func (p *Parser) Parse(pod *corev1.Pod) (Request, error) {
	containers, err := gpurequest.PodRequests(pod, p.ResourceNames)
	if err != nil {
		return Request{}, err
	}
	sel, err := gpurequest.ParseAnnotations(pod.Annotations)
	if err != nil {
		return Request{}, err
	}
	req, err := placement.NewRequest(containers, sel, p.DefaultGPUPolicy)
	if err != nil {
		return Request{}, err
	}
	policy := sel.NodePolicy
	if policy == "" {
		policy = p.DefaultNodePolicy
	}
	return Request{Request: req, NodePolicy: policy}, nil
}

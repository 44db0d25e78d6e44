package plugin

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tessera-gpu/tessera/scheduler/commit"
)

// Bind writes the pod's GPUAllocation and binds the pod, through the same
// protocol as the extender's bind: it waits while another pod's allocation
// on the node is in flight, and undoes the allocation if the binding fails
// (kube-scheduler then calls Unreserve), unless the binding may have been
// made (commit.ErrAllocationKept). A PodGroup's pod whose binding failed
// backs off (bindBackoff). A pod that asks for no GPUs is left to the next
// bind plugin.
func (p *Plugin) Bind(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	s, err := readState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if len(s.req.Containers) == 0 {
		return fwk.NewStatus(fwk.Skip)
	}
	if s.reservedAt.IsZero() {
		return fwk.AsStatus(fmt.Errorf("pod %s/%s has no GPUs reserved on node %s", pod.Namespace, pod.Name, nodeName))
	}
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod), "node", nodeName)
	if err := p.committer.Commit(klog.NewContext(ctx, logger), pod, nodeName, s.containers); err != nil {
		if errors.Is(err, commit.ErrAllocationKept) {
			// The pod may be bound: Unreserve leaves its GPUs reserved.
			s.reservedAt = time.Time{}
		}
		p.backoff.failed(pod, nodeName, err)
		return fwk.AsStatus(err)
	}
	p.backoff.bound(pod.UID)
	p.view.Bound(pod.UID)
	logger.V(2).Info("Bound pod with GPUs")
	return nil
}

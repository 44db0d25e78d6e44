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
// made (commit.ErrAllocationKept). A pod placed with its gang in a pod
// group cycle first waits at its gang's barrier (bindGang), GPUs or none.
// A PodGroup's pod whose binding failed backs off (bindBackoff). A pod
// that asks for no GPUs is left to the next bind plugin.
func (p *Plugin) Bind(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	s, err := readState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if len(s.req.Containers) > 0 && s.reservedAt.IsZero() {
		return fwk.AsStatus(fmt.Errorf("pod %s/%s has no GPUs reserved on node %s", pod.Namespace, pod.Name, nodeName))
	}
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod), "node", nodeName)
	ctx = klog.NewContext(ctx, logger)
	if s.gang != nil {
		if err := p.bindGang(ctx, s, pod, nodeName); err != nil {
			return fwk.AsStatus(err)
		}
	}
	if len(s.req.Containers) == 0 {
		return fwk.NewStatus(fwk.Skip)
	}
	if err := p.committer.Commit(ctx, pod, nodeName, s.containers, s.bind); err != nil {
		if errors.Is(err, commit.ErrAllocationKept) {
			// The pod may be bound: Unreserve leaves its GPUs reserved.
			s.reservedAt = time.Time{}
		}
		p.backoff.failed([]*v1.Pod{pod}, fmt.Sprintf("binding to node %s failed (%v)", nodeName, err))
		return fwk.AsStatus(err)
	}
	p.backoff.bound(pod.UID)
	p.view.Bound(pod.UID)
	logger.V(2).Info("Bound pod with GPUs")
	return nil
}

// bindGang does for the pod what can fail without binding it (its
// allocation and its binding, as dry runs), then waits until every pod
// placed with it has: kube-scheduler cannot unbind a pod, so none is
// bound unless all can be. When any cannot, every one's Bind fails with
// why, kube-scheduler gives back each one's reservation, and the gang is
// tried again whole after its back-off.
func (p *Plugin) bindGang(ctx context.Context, s *cycleState, pod *v1.Pod, nodeName string) error {
	if err := p.committer.DryRun(ctx, pod, nodeName, s.containers, s.bind); err != nil {
		p.gangs.fail(s.gang, fmt.Errorf("pod %s/%s cannot be bound: %w", pod.Namespace, pod.Name, err))
	}
	if err := p.gangs.wait(ctx, s.gang, pod.UID); err != nil {
		return fmt.Errorf("no pod of PodGroup %s placed with this one is bound: %w", s.gang.group, err)
	}
	klog.FromContext(ctx).V(4).Info("Every pod of the gang placed with this one can be bound", "podGroup", s.gang.group)
	return nil
}

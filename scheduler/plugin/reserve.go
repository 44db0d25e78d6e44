package plugin

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tessera-gpu/tessera/scheduler/quota"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// Reserve takes the pod's GPUs on the node in the view, fitting the pod
// again on what the view holds now, atomically with every other change.
// In a pod group cycle the pod joins the barrier of the placement tried
// (gangBarriers), GPUs or none; reserved again for binding, it is turned
// away if its gang was rolled back meanwhile.
func (p *Plugin) Reserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	s, err := readState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if s.gang != nil && !state.IsPodGroupSchedulingCycle() {
		if err := p.gangs.admit(s.gang, pod.UID); err != nil {
			return fwk.NewStatus(fwk.Unschedulable, "rolled back with its PodGroup: "+err.Error())
		}
	}
	if len(s.req.Containers) == 0 {
		gangReserved(state)
		p.joinGang(state, s, pod)
		return nil
	}
	now := p.clock.Now()
	var warning view.Reason
	reserved, err := p.view.ReserveWithin(p.rules.Limits(pod.Namespace), pod.UID, pod.Namespace, pod.Name, nodeName, now,
		p.rules.Fit(now, s.req.Request, "node(s)", &warning))
	if over := (*quota.ExceededError)(nil); errors.As(err, &over) {
		// Another pod of the namespace took the room since Filter.
		p.requeue.OverQuota(pod, now, over.Asked)
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, over.Reason)
	}
	if err != nil {
		return fwk.NewStatus(fwk.Unschedulable, "node no longer fits the pod's GPUs: "+err.Error())
	}
	s.reservedAt, s.containers, s.bind = now, reserved.Containers, reserved.Bind
	gangReserved(state)
	p.requeue.Placed(pod.UID, nodeName)
	if reserved.HoldFreed != "" {
		// Should the bind fail, the gang's room comes back where the
		// reservation was, so what was freed there stays free.
		p.requeue.Freed(reserved.HoldFreed)
	}
	if !warning.OK() && p.recorder != nil {
		p.recorder.Eventf(pod, nil, v1.EventTypeWarning, view.ReasonLimitsNotEnforced, "Scheduling", "placed on node %s, where %s", nodeName, warning)
	}
	if logger := klog.FromContext(ctx).V(4); logger.Enabled() {
		logger.Info("Reserved GPUs", "pod", klog.KObj(pod), "node", nodeName, "containers", len(reserved.Containers))
	}
	p.joinGang(state, s, pod)
	return nil
}

// joinGang adds the pod, reserved in a pod group cycle, to the barrier of
// the placement tried. The trial is undone after (Unreserve), and the pod
// stays a member: kube-scheduler reserves the pods placed on the chosen
// placement again for binding, with this cycle state.
func (p *Plugin) joinGang(state fwk.CycleState, s *cycleState, pod *v1.Pod) {
	if state.IsPodGroupSchedulingCycle() {
		s.gang = p.gangs.join(state.GetPlacementCycleState(), pod)
	}
}

// Unreserve gives back the GPUs Reserve took, unless something newer holds
// them for the pod. A gang's pod given back after it was reserved for
// binding (Permit refused it, its binding failed) rolls back its gang,
// unless the gang's bindings went ahead already.
func (p *Plugin) Unreserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) {
	s, err := readState(state)
	if err != nil {
		return
	}
	if s.gang != nil && !state.IsPodGroupSchedulingCycle() {
		p.gangs.fail(s.gang, fmt.Errorf("pod %s/%s of PodGroup %s was not bound", pod.Namespace, pod.Name, s.gang.group))
	}
	if s.reservedAt.IsZero() {
		return
	}
	if p.view.ReleaseReservation(pod.UID, s.reservedAt) {
		klog.FromContext(ctx).V(4).Info("Released reserved GPUs", "pod", klog.KObj(pod), "node", nodeName)
		p.requeue.Freed(nodeName)
		p.requeue.QuotaFreed(pod.Namespace)
	}
	s.reservedAt, s.containers, s.bind = time.Time{}, nil, ""
}

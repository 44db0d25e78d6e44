package plugin

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// EventsToRegister returns the cluster events after which kube-scheduler
// should ask about a pod the plugin turned away:
//   - a Node added, which kube-scheduler's snapshot lacked while its
//     GPUNode was already in the view;
//   - an assigned pod deleted. The tracker's own informer usually frees
//     its GPUs and activates the pods they serve first (see waiters.Queue), but
//     a pod whose preemption evicted the deleted one is held back by
//     DefaultPreemption's PreEnqueue until kube-scheduler's informer sees
//     the deletion too; an activation before then is lost, and
//     DefaultPreemption leaves the retry to the plugins that turned the
//     pod away, on this event.
//
// Every other way GPUs free up (an allocation deleted or failed, a pod
// that held GPUs ended, a GPUNode added or changed, a heartbeat back)
// reaches the requeuer from the tracker once the view holds it, and the
// requeuer activates only the pods the node can now hold. Registering
// those events as well would have kube-scheduler walk every unschedulable
// pod on each of them: with 18,000 pods waiting and 50 pods ending a
// second, that walk alone took most of a CPU, whatever the hints said.
// kube-scheduler walks them on a deleted assigned pod anyway, for
// NodeResourcesFit and DefaultPreemption.
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add}, QueueingHintFn: p.nodeAdded},
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}, QueueingHintFn: p.assignedPodDeleted},
	}, nil
}

// nodeAdded queues a pod when the added node, as the view holds it, could
// serve the pod.
func (p *Plugin) nodeAdded(_ klog.Logger, pod *v1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	added, ok := newObj.(*v1.Node)
	if !ok {
		return fwk.Queue, nil
	}
	return queueingHint(p.requeue.Hint(pod, added, added.Name)), nil
}

// assignedPodDeleted queues a pod when the node the deleted pod was on, as
// the view holds it, could serve the pod.
func (p *Plugin) assignedPodDeleted(_ klog.Logger, pod *v1.Pod, oldObj, _ any) (fwk.QueueingHint, error) {
	deleted, ok := oldObj.(*v1.Pod)
	if !ok {
		return fwk.Queue, nil
	}
	return queueingHint(p.requeue.Hint(pod, deleted, deleted.Spec.NodeName)), nil
}

// queueingHint is kube-scheduler's hint for whether an event may let a
// pod fit.
func queueingHint(mayFit bool) fwk.QueueingHint {
	if mayFit {
		return fwk.Queue
	}
	return fwk.QueueSkip
}

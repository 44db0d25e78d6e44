package plugin

import (
	"context"
	"maps"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// Tessera's resources as kube-scheduler names them for events: kube-scheduler
// watches them with dynamic informers and hands the hints unstructured
// objects.
const (
	gpuNodes       fwk.EventResource = "gpunodes.v1alpha1.gpu.tessera.dev"
	gpuAllocations fwk.EventResource = "gpuallocations.v1alpha1.gpu.tessera.dev"
)

// EventsToRegister returns the events after which a pod the plugin turned
// away may fit: a GPUNode added or changed (GPUs, cordons, readiness,
// heartbeat), a GPUAllocation deleted or failed, a pod that held GPUs
// deleted, a node added. Each GPU event queues only the pods that the
// requeuer would activate for the node it concerns (see requeuer.hint).
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: gpuNodes, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: p.gpuNodeChanged},
		{Event: fwk.ClusterEvent{Resource: gpuAllocations, ActionType: fwk.Delete | fwk.Update}, QueueingHintFn: p.allocationFreed},
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}, QueueingHintFn: p.assignedPodDeleted},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add}},
	}, nil
}

// allocationFreed queues a pod when an allocation's GPUs are freed (it was
// deleted, newObj nil, or its phase became Failed) and the node, without
// them, could serve the pod.
func (p *Plugin) allocationFreed(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	return p.requeue.hint(pod, event{oldObj, newObj}, func() freed {
		gone := oldObj
		if newObj != nil {
			if phase(newObj) != string(gpuv1alpha1.AllocationFailed) || phase(oldObj) == string(gpuv1alpha1.AllocationFailed) {
				return freed{nothing: true}
			}
			gone = newObj
		}
		a, ok := gone.(*unstructured.Unstructured)
		if !ok {
			return freed{}
		}
		if newObj != nil {
			logger.V(5).Info("GPU allocation failed; its GPUs are free", "allocation", klog.KObj(a))
		}
		node, _, _ := unstructured.NestedString(a.Object, "spec", "nodeName")
		holder, _, _ := unstructured.NestedString(a.Object, "spec", "podUID")
		return freed{node: node, without: types.UID(holder)}
	}), nil
}

// assignedPodDeleted queues a pod when a deleted pod's node, without the
// GPUs it held, could serve the pod.
func (p *Plugin) assignedPodDeleted(_ klog.Logger, pod *v1.Pod, oldObj, _ any) (fwk.QueueingHint, error) {
	return p.requeue.hint(pod, event{oldObj, nil}, func() freed {
		deleted, ok := oldObj.(*v1.Pod)
		if !ok {
			return freed{}
		}
		return freed{node: deleted.Spec.NodeName, without: deleted.UID}
	}), nil
}

// gpuNodeChanged queues a pod when a GPUNode appears or changes in what
// placement reads (its GPUs, its cordons, or a condition's status) and
// the node could serve the pod. The writes that change nothing of that
// (the free memory the extender and this plugin publish for kubectl, a
// condition's reason or times) would otherwise retry every pod turned
// away, and tell each again why it waits. The view may not hold the
// change yet; the tracker tells the requeuer once it does.
func (p *Plugin) gpuNodeChanged(_ klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	return p.requeue.hint(pod, event{oldObj, newObj}, func() freed {
		newNode, ok := newObj.(*unstructured.Unstructured)
		if !ok {
			return freed{}
		}
		if oldNode, ok := oldObj.(*unstructured.Unstructured); ok && !gpuNodeMayTakeMore(oldNode, newNode) {
			return freed{nothing: true}
		}
		return freed{node: newNode.GetName()}
	}), nil
}

// gpuNodeMayTakeMore reports whether a GPUNode's update changed what
// placement reads.
func gpuNodeMayTakeMore(oldNode, newNode *unstructured.Unstructured) bool {
	for _, path := range [][]string{{"spec"}, {"status", "devices"}} {
		before, _, _ := unstructured.NestedFieldNoCopy(oldNode.Object, path...)
		after, _, _ := unstructured.NestedFieldNoCopy(newNode.Object, path...)
		if !equality.Semantic.DeepEqual(before, after) {
			return true
		}
	}
	return !maps.Equal(conditionStatuses(oldNode), conditionStatuses(newNode))
}

// conditionStatuses maps an unstructured GPUNode's condition types to their
// statuses.
func conditionStatuses(node *unstructured.Unstructured) map[string]string {
	conditions, _, _ := unstructured.NestedSlice(node.Object, "status", "conditions")
	out := make(map[string]string, len(conditions))
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok {
			typ, _ := m["type"].(string)
			status, _ := m["status"].(string)
			out[typ] = status
		}
	}
	return out
}

// phase is an unstructured GPUAllocation's status.phase, or "".
func phase(obj any) string {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return ""
	}
	s, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	return s
}

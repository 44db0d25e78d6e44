package plugin

import (
	"context"
	"maps"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
// deleted, a node added.
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: gpuNodes, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: gpuNodeChanged},
		{Event: fwk.ClusterEvent{Resource: gpuAllocations, ActionType: fwk.Delete | fwk.Update}, QueueingHintFn: allocationFreed},
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add}},
	}, nil
}

// allocationFreed queues a pod when an allocation's GPUs are freed: it was
// deleted (newObj is nil) or its phase became Failed.
func allocationFreed(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	if newObj == nil {
		return fwk.Queue, nil
	}
	if phase(newObj) == string(gpuv1alpha1.AllocationFailed) && phase(oldObj) != string(gpuv1alpha1.AllocationFailed) {
		logger.V(5).Info("GPU allocation failed; its GPUs are free", "pod", klog.KObj(pod))
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

// gpuNodeChanged queues a pod when a GPUNode appears or changes in what
// placement reads: its GPUs, its cordons, or a condition's status. The
// writes that change nothing of that (the free memory the extender and
// this plugin publish for kubectl, a condition's reason or times) would
// otherwise retry every pod turned away, and tell each again why it waits.
func gpuNodeChanged(_ klog.Logger, _ *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	oldNode, okOld := oldObj.(*unstructured.Unstructured)
	newNode, okNew := newObj.(*unstructured.Unstructured)
	if !okOld || !okNew {
		return fwk.Queue, nil
	}
	for _, path := range [][]string{{"spec"}, {"status", "devices"}} {
		before, _, _ := unstructured.NestedFieldNoCopy(oldNode.Object, path...)
		after, _, _ := unstructured.NestedFieldNoCopy(newNode.Object, path...)
		if !equality.Semantic.DeepEqual(before, after) {
			return fwk.Queue, nil
		}
	}
	if !maps.Equal(conditionStatuses(oldNode), conditionStatuses(newNode)) {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
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

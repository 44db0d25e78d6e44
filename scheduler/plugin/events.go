package plugin

import (
	"context"

	v1 "k8s.io/api/core/v1"
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
		{Event: fwk.ClusterEvent{Resource: gpuNodes, ActionType: fwk.Add | fwk.Update}},
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

// phase is an unstructured GPUAllocation's status.phase, or "".
func phase(obj any) string {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return ""
	}
	s, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	return s
}

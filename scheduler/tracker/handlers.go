package tracker

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// gpuNodeHandler keeps each node's devices, cordons and readiness current.
func (t *Tracker) gpuNodeHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if gn, ok := obj.(*gpuv1alpha1.GPUNode); ok && !t.servedByDRA(gn) {
				t.setGPUNode(gn)
				t.freed(gn.Name)
			}
		},
		UpdateFunc: func(oldObj, obj any) {
			gn, ok := obj.(*gpuv1alpha1.GPUNode)
			if !ok || t.servedByDRA(gn) {
				return
			}
			t.setGPUNode(gn)
			if old, ok := oldObj.(*gpuv1alpha1.GPUNode); !ok || mayTakeMore(old, gn) {
				t.freed(gn.Name)
			}
		},
		DeleteFunc: func(obj any) {
			if gn, ok := unwrap(obj).(*gpuv1alpha1.GPUNode); ok {
				t.view.DeleteGPUNode(gn.Name)
				t.gate.SetUnqueued(gn.Name, false)
			}
		},
	}
}

// setGPUNode records the node's devices and state, and whether its binds
// take turns: not when its device plugin learns from the kubelet which
// pod it allocates for.
func (t *Tracker) setGPUNode(gn *gpuv1alpha1.GPUNode) {
	t.view.SetGPUNode(gn)
	t.gate.SetUnqueued(gn.Name, gn.Status.PodIdentification == gpuv1alpha1.PodIdentificationPodResources)
}

// servedByDRA reports whether kube-scheduler allocates the node's GPUs
// through DRA, and if so takes the node out of the view: Tessera's
// scheduler neither places pods there nor exports or publishes what it
// cannot know of (the node's daemon does, from the ResourceClaims).
func (t *Tracker) servedByDRA(gn *gpuv1alpha1.GPUNode) bool {
	if gn.Status.KubeletAPI != gpuv1alpha1.KubeletAPIDRA {
		return false
	}
	t.view.DeleteGPUNode(gn.Name)
	return true
}

// allocationHandler applies each allocation's holds and its phase.
func (t *Tracker) allocationHandler(logger klog.Logger) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if a, ok := obj.(*gpuv1alpha1.GPUAllocation); ok {
				t.allocationChanged(logger, a)
			}
		},
		UpdateFunc: func(_, obj any) {
			if a, ok := obj.(*gpuv1alpha1.GPUAllocation); ok {
				t.allocationChanged(logger, a)
			}
		},
		DeleteFunc: func(obj any) {
			if a, ok := unwrap(obj).(*gpuv1alpha1.GPUAllocation); ok {
				if p, ok := t.view.ReleaseAllocation(a); ok {
					t.released(p)
				}
				t.gate.ReleaseAllocation(a.Spec.NodeName, a.Spec.PodUID, a.UID)
			}
		},
	}
}

func (t *Tracker) allocationChanged(logger klog.Logger, a *gpuv1alpha1.GPUAllocation) {
	uid, node := a.Spec.PodUID, a.Spec.NodeName
	if a.Status.Phase == gpuv1alpha1.AllocationFailed {
		// The device plugin gave nothing out: the GPUs are free again.
		if p, ok := t.view.ReleaseAllocation(a); ok {
			logger.V(2).Info("Released GPUs of failed allocation", "allocation", klog.KObj(a), "node", node, "message", a.Status.Message)
			t.released(p)
		}
		t.gate.ReleaseAllocation(node, uid, a.UID)
		return
	}
	pod, err := t.pods.Pods(a.Namespace).Get(a.Name)
	switch {
	case err == nil && pod.UID == uid && PodDone(pod):
		if p, ok := t.view.ReleaseAllocation(a); ok {
			t.released(p)
		}
		t.gate.ReleaseAllocation(node, uid, a.UID)
		return
	case err == nil && pod.UID != uid, errors.IsNotFound(err):
		// Probably an orphan. Until that is confirmed its GPUs count as
		// taken: counting too much delays a pod, too little over-commits.
		t.orphans.Add(cache.MetaObjectToName(a))
	}
	t.view.Place(a)
	if a.Status.Phase == gpuv1alpha1.AllocationAllocated {
		t.gate.ReleaseAllocation(node, uid, a.UID)
	} else {
		t.gate.Observe(node, uid, a.UID, a.CreationTimestamp.Time)
	}
}

// podHandler frees a pod's GPUs when it ends or is deleted.
func (t *Tracker) podHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := obj.(*corev1.Pod); ok && PodDone(pod) {
				t.releasePod(pod)
			}
		},
		UpdateFunc: func(_, obj any) {
			if pod, ok := obj.(*corev1.Pod); ok && PodDone(pod) {
				t.releasePod(pod)
			}
		},
		DeleteFunc: func(obj any) {
			if pod, ok := unwrap(obj).(*corev1.Pod); ok {
				t.releasePod(pod)
				t.orphans.AddAfter(cache.MetaObjectToName(pod), collectAfter)
				if t.requeue != nil {
					t.requeue.Forget(pod.UID)
				}
			}
		},
	}
}

func (t *Tracker) releasePod(pod *corev1.Pod) {
	if p, ok := t.view.Release(pod.UID); ok {
		t.gate.Release(p.Node, pod.UID)
		t.released(p)
	}
	if pod.Spec.NodeName != "" {
		t.gate.Release(pod.Spec.NodeName, pod.UID)
	}
}

// PodDone reports whether a pod's containers have all stopped for good.
func PodDone(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// unwrap returns the object inside a tombstone.
func unwrap(obj any) any {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}

// mayTakeMore reports whether a GPUNode update may let the node take pods
// it turned away: its GPUs or cordons changed, it became ready, or its
// HAMi-core library, without which it refuses GPU slices, is back.
func mayTakeMore(old, gn *gpuv1alpha1.GPUNode) bool {
	if !equality.Semantic.DeepEqual(old.Spec, gn.Spec) || !equality.Semantic.DeepEqual(old.Status.Devices, gn.Status.Devices) {
		return true
	}
	_, wasMissing := view.NoHAMiCore(old)
	_, missing := view.NoHAMiCore(gn)
	return !ready(old) && ready(gn) || wasMissing && !missing
}

// ready reports whether the GPUNode's Ready condition lets the node take
// pods: it is True, or the GPUNode has none.
func ready(gn *gpuv1alpha1.GPUNode) bool {
	c := meta.FindStatusCondition(gn.Status.Conditions, gpuv1alpha1.GPUNodeReady)
	return c == nil || c.Status == metav1.ConditionTrue
}

package tracker

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// Trim returns an informer transform that keeps only what the extender
// reads of pods, GPUAllocations, GPUNodes, Leases, ResourceQuotas and
// Nodes. At 40,000 pods the
// whole objects, with their managed fields, would be most of the
// extender's memory.
func Trim(names gpurequest.ResourceNames) cache.TransformFunc {
	resources := names.All()
	annotations := gpurequest.AnnotationKeys()
	return func(obj any) (any, error) {
		switch o := obj.(type) {
		case *corev1.Pod:
			return trimPod(o, resources, annotations), nil
		case *gpuv1alpha1.GPUAllocation:
			return trimAllocation(o), nil
		case *gpuv1alpha1.GPUNode:
			// The view copies what it needs; the tracker compares spec and status.
			o.ManagedFields = nil
			return o, nil
		case *corev1.ResourceQuota:
			// The scheduler reads the limits, never what the quota
			// controller counts.
			return &corev1.ResourceQuota{TypeMeta: o.TypeMeta, ObjectMeta: trimMeta(&o.ObjectMeta), Spec: o.Spec}, nil
		case *corev1.Node:
			// Where a gang's pods may run: its labels and taints.
			meta := trimMeta(&o.ObjectMeta)
			meta.Labels = o.Labels
			return &corev1.Node{TypeMeta: o.TypeMeta, ObjectMeta: meta, Spec: corev1.NodeSpec{Taints: o.Spec.Taints}}, nil
		case *coordinationv1.Lease:
			// A node's heartbeat is its Lease's renew time.
			return &coordinationv1.Lease{
				TypeMeta:   o.TypeMeta,
				ObjectMeta: trimMeta(&o.ObjectMeta),
				Spec:       coordinationv1.LeaseSpec{RenewTime: o.Spec.RenewTime},
			}, nil
		}
		return obj, nil
	}
}

// trimPod keeps a pod's identity, node, scheduler, priority and phase,
// the key of its gang's held room, which counts the gang's placed pods when
// the room is held again after a restart, and the parked label, which
// tessera-scheduler takes off a bound pod; and for a pod not yet bound,
// what bind reads of its request: placement annotations and the
// containers' GPU resources, and what the extender's fit gate reads,
// its PodScheduled condition among it. A bound pod is never bound again, so its
// request is dropped.
func trimPod(pod *corev1.Pod, resources []corev1.ResourceName, annotations []string) *corev1.Pod {
	out := &corev1.Pod{
		TypeMeta:   pod.TypeMeta,
		ObjectMeta: trimMeta(&pod.ObjectMeta),
		Spec: corev1.PodSpec{
			NodeName:      pod.Spec.NodeName,
			SchedulerName: pod.Spec.SchedulerName,
			// What the extender weighs to say whom preemption would evict.
			Priority: pod.Spec.Priority,
		},
		Status: corev1.PodStatus{Phase: pod.Status.Phase},
	}
	if key, ok := pod.Annotations[gpuv1alpha1.GangHoldAnnotation]; ok {
		out.Annotations = map[string]string{gpuv1alpha1.GangHoldAnnotation: key}
	}
	if v, ok := pod.Labels[gpuv1alpha1.ParkedLabel]; ok {
		out.Labels = map[string]string{gpuv1alpha1.ParkedLabel: v}
	}
	if pod.Spec.NodeName != "" {
		return out
	}
	// What the extender's fit gate reads (scheduler/gatelift): the gate
	// it lifts, and whether the pod is of a gang or may preempt.
	out.Spec.SchedulingGates = pod.Spec.SchedulingGates
	out.Spec.SchedulingGroup = pod.Spec.SchedulingGroup
	out.Spec.PreemptionPolicy = pod.Spec.PreemptionPolicy
	// Why the pod waits, as told: a held pod is told again only when
	// that changes.
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			out.Status.Conditions = []corev1.PodCondition{c}
		}
	}
	out.Spec.InitContainers = trimContainers(pod.Spec.InitContainers, resources)
	out.Spec.Containers = trimContainers(pod.Spec.Containers, resources)
	for _, key := range annotations {
		if v, ok := pod.Annotations[key]; ok {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[key] = v
		}
	}
	return out
}

// trimAllocation keeps what the view places and the tracker checks: the
// allocation's identity and the token of the bind that wrote it, its
// pod, node and devices, and its phase.
func trimAllocation(a *gpuv1alpha1.GPUAllocation) *gpuv1alpha1.GPUAllocation {
	meta := trimMeta(&a.ObjectMeta)
	if token, ok := a.Annotations[gpuv1alpha1.BindAnnotation]; ok {
		meta.Annotations = map[string]string{gpuv1alpha1.BindAnnotation: token}
	}
	return &gpuv1alpha1.GPUAllocation{
		TypeMeta:   a.TypeMeta,
		ObjectMeta: meta,
		Spec: gpuv1alpha1.GPUAllocationSpec{
			PodUID:     a.Spec.PodUID,
			NodeName:   a.Spec.NodeName,
			Containers: a.Spec.Containers,
		},
		Status: gpuv1alpha1.GPUAllocationStatus{
			Phase:   a.Status.Phase,
			Message: a.Status.Message,
		},
	}
}

// trimMeta keeps an object's identity and age.
func trimMeta(m *metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		CreationTimestamp: m.CreationTimestamp,
		DeletionTimestamp: m.DeletionTimestamp,
	}
}

func trimContainers(containers []corev1.Container, resources []corev1.ResourceName) []corev1.Container {
	if len(containers) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(containers))
	for i := range containers {
		c := &containers[i]
		out[i] = corev1.Container{
			Name:          c.Name,
			RestartPolicy: c.RestartPolicy,
			Resources: corev1.ResourceRequirements{
				Limits:   keep(c.Resources.Limits, resources),
				Requests: keep(c.Resources.Requests, resources),
			},
		}
	}
	return out
}

func keep(list corev1.ResourceList, resources []corev1.ResourceName) corev1.ResourceList {
	var out corev1.ResourceList
	for _, name := range resources {
		if q, ok := list[name]; ok {
			if out == nil {
				out = corev1.ResourceList{}
			}
			out[name] = q
		}
	}
	return out
}

package tracker

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/tessera-gpu/tessera/gpurequest"
)

// TrimPod returns an informer transform that keeps only what the extender
// reads of a pod: identity, placement annotations, the containers' GPU
// resources, node, scheduler and phase. At tens of thousands of pods this
// keeps the cache small.
func TrimPod(names gpurequest.ResourceNames) cache.TransformFunc {
	resources := names.All()
	annotations := gpurequest.AnnotationKeys()
	return func(obj any) (any, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return obj, nil
		}
		out := &corev1.Pod{
			TypeMeta: pod.TypeMeta,
			ObjectMeta: metav1.ObjectMeta{
				Name:              pod.Name,
				Namespace:         pod.Namespace,
				UID:               pod.UID,
				ResourceVersion:   pod.ResourceVersion,
				CreationTimestamp: pod.CreationTimestamp,
				DeletionTimestamp: pod.DeletionTimestamp,
			},
			Spec: corev1.PodSpec{
				NodeName:       pod.Spec.NodeName,
				SchedulerName:  pod.Spec.SchedulerName,
				InitContainers: trimContainers(pod.Spec.InitContainers, resources),
				Containers:     trimContainers(pod.Spec.Containers, resources),
			},
			Status: corev1.PodStatus{Phase: pod.Status.Phase},
		}
		for _, key := range annotations {
			if v, ok := pod.Annotations[key]; ok {
				if out.Annotations == nil {
					out.Annotations = map[string]string{}
				}
				out.Annotations[key] = v
			}
		}
		return out, nil
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

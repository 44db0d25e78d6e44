package viewsync

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// keepPending is trim for every object but pods not yet bound, which it
// keeps whole but for their managed fields, as kube-scheduler's own pod
// informer does: a front end that judges pending pods reads them all.
func keepPending(trim cache.TransformFunc) cache.TransformFunc {
	return func(obj any) (any, error) {
		if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName == "" {
			pod.ManagedFields = nil
			return pod, nil
		}
		return trim(obj)
	}
}

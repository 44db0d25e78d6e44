package quota

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"
)

// RaisedHandler calls raised with the namespace of every ResourceQuota on
// GPUs whose spec changed, or that was deleted: what may give a namespace
// more room. A quota created only lowers a limit, and a pod a quota turned
// away waits for no change of its status either, which the quota
// controller rewrites as the namespace's pods come and go.
func RaisedHandler(raised func(namespace string)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, obj any) {
			old, okOld := oldObj.(*corev1.ResourceQuota)
			q, ok := obj.(*corev1.ResourceQuota)
			if ok && okOld && (Sets(old) || Sets(q)) && !equality.Semantic.DeepEqual(old.Spec, q.Spec) {
				raised(q.Namespace)
			}
		},
		DeleteFunc: func(obj any) {
			if gone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = gone.Obj
			}
			if q, ok := obj.(*corev1.ResourceQuota); ok && Sets(q) {
				raised(q.Namespace)
			}
		},
	}
}

package tracker

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"

	"github.com/tessera-gpu/tessera/scheduler/quota"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// QuotaRequeue makes the scheduler retry the pods a namespace's GPU quota
// turned away.
type QuotaRequeue interface {
	// QuotaFreed says the namespace's GPU quota may have room for more:
	// its pods freed GPUs (the view holds that already), or one of its
	// ResourceQuotas was raised or deleted (the informer's cache holds
	// that already).
	QuotaFreed(namespace string)
}

// quotaHandler tells the requeuer of every ResourceQuota on GPUs whose
// spec changed, or that was deleted. A quota created only lowers a limit,
// and a pod the quota turned away waits for no change of it then; nor for
// its status, which the quota controller rewrites as pods come and go.
func (t *Tracker) quotaHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, obj any) {
			old, okOld := oldObj.(*corev1.ResourceQuota)
			q, ok := obj.(*corev1.ResourceQuota)
			if ok && okOld && (quota.Sets(old) || quota.Sets(q)) && !equality.Semantic.DeepEqual(old.Spec, q.Spec) {
				t.quotaFreed(q.Namespace)
			}
		},
		DeleteFunc: func(obj any) {
			if q, ok := unwrap(obj).(*corev1.ResourceQuota); ok && quota.Sets(q) {
				t.quotaFreed(q.Namespace)
			}
		},
	}
}

// released tells the requeuers that a pod gave back what it held: GPUs
// on its node, and room in its namespace's quota.
func (t *Tracker) released(p *view.Pod) {
	t.freed(p.Node)
	t.quotaFreed(p.Namespace)
}

// quotaFreed tells the requeuer that the namespace's quota may have room.
func (t *Tracker) quotaFreed(namespace string) {
	if t.quotaRequeue != nil {
		t.quotaRequeue.QuotaFreed(namespace)
	}
}

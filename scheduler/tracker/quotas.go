package tracker

import (
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

// quotaHandler tells the requeuer of every ResourceQuota on GPUs that
// may give its namespace more room.
func (t *Tracker) quotaHandler() cache.ResourceEventHandler {
	return quota.RaisedHandler(t.quotaFreed)
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

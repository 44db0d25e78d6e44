package tracker

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/tools/cache"
)

// leaseHandler keeps each node's heartbeat, its Lease's renew time, current.
// A renewal after a stale one may let the node take pods it turned away.
func (t *Tracker) leaseHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if l, ok := obj.(*coordinationv1.Lease); ok {
				t.view.SetLease(l.Name, renewTime(l))
				t.freed()
			}
		},
		UpdateFunc: func(oldObj, obj any) {
			l, ok := obj.(*coordinationv1.Lease)
			if !ok {
				return
			}
			t.view.SetLease(l.Name, renewTime(l))
			if old, ok := oldObj.(*coordinationv1.Lease); !ok || t.clock.Since(renewTime(old)) > t.heartbeatMaxAge {
				t.freed()
			}
		},
		DeleteFunc: func(obj any) {
			if l, ok := unwrap(obj).(*coordinationv1.Lease); ok {
				t.view.DeleteLease(l.Name)
			}
		},
	}
}

// renewTime is when the Lease was last renewed; zero when never.
func renewTime(l *coordinationv1.Lease) time.Time {
	if l.Spec.RenewTime == nil {
		return time.Time{}
	}
	return l.Spec.RenewTime.Time
}

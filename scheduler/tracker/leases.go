package tracker

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/tools/cache"
)

// leaseHandler keeps each node's heartbeat current: when the scheduler last
// saw its Lease renewed, by the scheduler's own clock (liveness.Renewals),
// never the node's. A renewal after a stale one may let the node take pods
// it turned away.
func (t *Tracker) leaseHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if l, ok := obj.(*coordinationv1.Lease); ok {
				t.view.SetLease(l.Name, t.renewals.Observe(l))
				t.freed(l.Name)
			}
		},
		UpdateFunc: func(_, obj any) {
			l, ok := obj.(*coordinationv1.Lease)
			if !ok {
				return
			}
			// The Marker may have observed this renewal first; what the
			// view held before still tells whether the node was stale.
			renewed := t.renewals.Observe(l)
			if before := t.view.SetLease(l.Name, renewed); renewed.After(before) && t.clock.Since(before) > t.heartbeatMaxAge {
				t.freed(l.Name)
			}
		},
		DeleteFunc: func(obj any) {
			if l, ok := unwrap(obj).(*coordinationv1.Lease); ok {
				t.renewals.Forget(l.Name)
				t.view.DeleteLease(l.Name)
			}
		},
	}
}

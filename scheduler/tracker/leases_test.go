package tracker

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/tessera-gpu/tessera/scheduler/view"
)

// seenLease records l as the tracker's Lease handler would on adding it,
// without telling the requeuer.
func (f *fixture) seenLease(l *coordinationv1.Lease) {
	f.view.SetLease(l.Name, f.tracker.renewals.Observe(l))
}

// TestLeaseAgeIgnoresNodeClock pins that a node's heartbeat is aged by the
// scheduler's clock from when the scheduler saw it renewed, whatever the
// node's clock wrote into the Lease.
func TestLeaseAgeIgnoresNodeClock(t *testing.T) {
	const maxAge = time.Minute // the fixture's HeartbeatMaxAge
	tests := []struct {
		name string
		// skew is how far the node's clock is off the scheduler's.
		skew time.Duration
		// renews says whether the node's device plugin keeps renewing
		// its Lease every 10 seconds.
		renews bool
	}{
		{name: "a live node with its clock 10 minutes behind is never stale", skew: -10 * time.Minute, renews: true},
		{name: "a live node with its clock 10 minutes ahead is never stale", skew: 10 * time.Minute, renews: true},
		{name: "a dead node with its clock 10 minutes ahead goes stale after the max age", skew: 10 * time.Minute},
		{name: "a dead node with its clock 10 minutes behind goes stale after the max age", skew: -10 * time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			h := f.tracker.leaseHandler()
			var last *coordinationv1.Lease
			renew := func() {
				l := lease("n1", f.clock.Now().Add(tc.skew))
				if last == nil {
					h.OnAdd(l, true)
				} else {
					h.OnUpdate(last, l)
				}
				last = l
			}
			unavailable := func() string {
				var reason string
				f.view.Read([]string{"n1"}, "", func(_ string, n *view.Node) { reason = string(n.Unavailable(f.clock.Now(), maxAge)) })
				return reason
			}
			renew()
			for elapsed := time.Duration(0); elapsed <= 3*maxAge; elapsed += 10 * time.Second {
				if elapsed > 0 {
					f.clock.Step(10 * time.Second)
					if tc.renews {
						renew()
					}
				}
				reason := unavailable()
				switch wantStale := !tc.renews && elapsed > maxAge; {
				case wantStale && reason == "":
					t.Fatalf("%s after the last renewal the node still takes pods, want stale after %s", elapsed, maxAge)
				case !wantStale && reason != "":
					t.Fatalf("%s after the first renewal: %s", elapsed, reason)
				}
			}
		})
	}
}

package liveness

import (
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/clock"
)

// Renewals records when the scheduler saw each node's Lease renewed, by
// its own clock. A Lease's renewTime is stamped by the node's clock, which
// may be minutes off the scheduler's: aged against the scheduler's clock, a
// node running behind would look stale forever and one running ahead would
// hide its death. As Kubernetes' node lifecycle controller does, the age of
// a heartbeat is measured from when it was observed instead, and the node's
// timestamp only tells one renewal from the next.
//
// The tracker, which feeds the view that placement reads, and the Marker,
// which writes the GPUNodes' Ready condition, share one Renewals, so that
// both see every node at the same age whichever of them sees a renewal
// first. It is safe for concurrent use.
type Renewals struct {
	clock clock.PassiveClock

	mu sync.Mutex
	// seen is the last version of each Lease observed, by Lease name.
	seen map[string]renewal
}

// renewal is one version of a Lease and when it was first observed.
type renewal struct {
	renewTime       time.Time
	resourceVersion string
	observed        time.Time
}

// NewRenewals returns a Renewals that has seen no Lease yet.
func NewRenewals(clk clock.PassiveClock) *Renewals {
	return &Renewals{clock: clk, seen: map[string]renewal{}}
}

// Observe returns when the Lease was last seen renewed, by the observer's
// clock; zero when it was never renewed (it has no renewTime). A Lease
// whose renewTime or resourceVersion differs from the last version seen
// counts as renewed now. So does a Lease seen for the first time, as every
// Lease is when the scheduler starts: each node is given the full age to
// be seen renewing, as the node lifecycle controller gives its grace
// period, and a Lease that never changes afterwards goes stale then.
func (r *Renewals) Observe(l *coordinationv1.Lease) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l.Spec.RenewTime == nil {
		delete(r.seen, l.Name)
		return time.Time{}
	}
	last, ok := r.seen[l.Name]
	if ok && last.renewTime.Equal(l.Spec.RenewTime.Time) && last.resourceVersion == l.ResourceVersion {
		return last.observed
	}
	now := r.clock.Now()
	r.seen[l.Name] = renewal{renewTime: l.Spec.RenewTime.Time, resourceVersion: l.ResourceVersion, observed: now}
	return now
}

// Forget drops a deleted Lease, so that one made again under its name is
// seen afresh.
func (r *Renewals) Forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.seen, name)
}

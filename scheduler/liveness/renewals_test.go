package liveness

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
)

func lease(renewed *time.Time, resourceVersion string) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: "tessera-node-lease", ResourceVersion: resourceVersion}}
	if renewed != nil {
		l.Spec.RenewTime = &metav1.MicroTime{Time: *renewed}
	}
	return l
}

func TestRenewalsObserve(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	// The node's clock is far off the observer's: its renewTime never
	// counts, only whether it changed.
	nodeTime := start.Add(-time.Hour)
	later := nodeTime.Add(10 * time.Second)
	tests := []struct {
		name string
		// steps are the Leases observed a minute apart, the last one's
		// observation being the one checked.
		steps []*coordinationv1.Lease
		// forget drops the Lease before the last step.
		forget bool
		// want is the minute, counted from the first step, at which the
		// last Lease was seen renewed; -1 for never.
		want int
	}{
		{name: "first sight counts as renewed now", steps: []*coordinationv1.Lease{lease(&nodeTime, "1")}, want: 0},
		{name: "an unchanged Lease keeps its observed time", steps: []*coordinationv1.Lease{lease(&nodeTime, "1"), lease(&nodeTime, "1"), lease(&nodeTime, "1")}, want: 0},
		{name: "a new renewTime is a renewal", steps: []*coordinationv1.Lease{lease(&nodeTime, "1"), lease(&nodeTime, "1"), lease(&later, "2")}, want: 2},
		{name: "a renewTime set back by the node is a renewal", steps: []*coordinationv1.Lease{lease(&later, "1"), lease(&nodeTime, "2")}, want: 1},
		{name: "a new resourceVersion is a renewal", steps: []*coordinationv1.Lease{lease(&nodeTime, "1"), lease(&nodeTime, "2")}, want: 1},
		{name: "a Lease never renewed has no observed renewal", steps: []*coordinationv1.Lease{lease(nil, "1")}, want: -1},
		{name: "a Lease made again is seen afresh", steps: []*coordinationv1.Lease{lease(&nodeTime, "1"), lease(&nodeTime, "1")}, forget: true, want: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakePassiveClock(start)
			r := NewRenewals(clk)
			var got time.Time
			for i, l := range tc.steps {
				clk.SetTime(start.Add(time.Duration(i) * time.Minute))
				if tc.forget && i == len(tc.steps)-1 {
					r.Forget(l.Name)
				}
				got = r.Observe(l)
			}
			want := time.Time{}
			if tc.want >= 0 {
				want = start.Add(time.Duration(tc.want) * time.Minute)
			}
			if !got.Equal(want) {
				t.Errorf("observed renewal at %v, want %v", got, want)
			}
		})
	}
}

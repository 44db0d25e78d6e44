package rows

import (
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

func TestBindCycle(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name string
		pods map[string]*podTimeline
		want BindCycle
	}{
		{
			name: "two pods in turn on one node",
			pods: map[string]*podTimeline{
				"p1": {node: "n1", allocationCreate: at(0), bound: at(10), allocated: at(30)},
				"p2": {node: "n1", allocationCreate: at(35), bound: at(45), allocated: at(65)},
			},
			want: BindCycle{
				Writes:  meter.Quantiles{P50: 10 * time.Millisecond, P99: 10 * time.Millisecond, Count: 2},
				Kubelet: meter.Quantiles{P50: 20 * time.Millisecond, P99: 20 * time.Millisecond, Count: 2},
				Handoff: meter.Quantiles{P50: 5 * time.Millisecond, P99: 5 * time.Millisecond, Count: 1},
			},
		},
		{
			name: "pods on different nodes have no handoff",
			pods: map[string]*podTimeline{
				"p1": {node: "n1", allocationCreate: at(0), bound: at(10), allocated: at(30)},
				"p2": {node: "n2", allocationCreate: at(35), bound: at(45), allocated: at(65)},
			},
			want: BindCycle{
				Writes:  meter.Quantiles{P50: 10 * time.Millisecond, P99: 10 * time.Millisecond, Count: 2},
				Kubelet: meter.Quantiles{P50: 20 * time.Millisecond, P99: 20 * time.Millisecond, Count: 2},
			},
		},
		{
			name: "a node left idle over a second is no handoff",
			pods: map[string]*podTimeline{
				"p1": {node: "n1", allocationCreate: at(0), bound: at(10), allocated: at(30)},
				"p2": {node: "n1", allocationCreate: at(5000), bound: at(5010), allocated: at(5030)},
			},
			want: BindCycle{
				Writes:  meter.Quantiles{P50: 10 * time.Millisecond, P99: 10 * time.Millisecond, Count: 2},
				Kubelet: meter.Quantiles{P50: 20 * time.Millisecond, P99: 20 * time.Millisecond, Count: 2},
			},
		},
		{
			name: "a pod missing a step counts in the steps it has",
			pods: map[string]*podTimeline{
				"p1": {node: "n1", allocationCreate: at(0), bound: at(10)},
				"p2": {node: "n1", allocationCreate: at(20)},
			},
			want: BindCycle{Writes: meter.Quantiles{P50: 10 * time.Millisecond, P99: 10 * time.Millisecond, Count: 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := bindCycle(tt.pods); got != tt.want {
				t.Errorf("bindCycle =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

package nodescore

import (
	"testing"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tessera-gpu/tessera/gpurequest"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name   string
		policy gpurequest.Policy
		loads  []float64
		fits   []bool
		want   []int64
	}{
		{name: "binpack puts the busiest node first", policy: gpurequest.Binpack,
			loads: []float64{0, 1, 0.5}, fits: []bool{true, true, true}, want: []int64{10, 100, 60}},
		{name: "spread puts the emptiest node first", policy: gpurequest.Spread,
			loads: []float64{0, 1, 0.5}, fits: []bool{true, true, true}, want: []int64{100, 10, 60}},
		{name: "a node the pod does not fit scores 0", policy: gpurequest.Spread,
			loads: []float64{0, 0.2, 0.4}, fits: []bool{false, true, true}, want: []int64{0, 100, 10}},
		{name: "equal loads score equally", policy: gpurequest.Binpack,
			loads: []float64{0.5, 0.5}, fits: []bool{true, true}, want: []int64{100, 100}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			scores := make(fwk.NodeScoreList, len(tc.loads))
			for i := range tc.loads {
				scores[i] = fwk.NodeScore{Name: string(rune('a' + i)), Score: FromLoad(tc.loads[i], tc.fits[i])}
			}
			Normalize(scores, tc.policy)
			for i, want := range tc.want {
				if scores[i].Score != want {
					t.Errorf("node %s scored %d, want %d (all: %v)", scores[i].Name, scores[i].Score, want, scores)
				}
			}
		})
	}
}

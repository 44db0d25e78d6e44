package placement

import (
	"fmt"
	"math"
	"testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

func TestLoad(t *testing.T) {
	half := node(with(gpu(0), used(40960, 50, 1)))
	empty := node(gpu(0))
	small := request(app("a", 1, 8192, 10))
	tests := []struct {
		name   string
		node   *Node
		req    *Request
		want   float64
		wantOK bool
	}{
		{name: "a busier node has a higher load", node: half, req: small, want: 0.6, wantOK: true},
		{name: "an emptier node has a lower load", node: empty, req: small, want: 0.1, wantOK: true},
		{name: "the pod's own placement counts", node: empty, req: request(app("a", 1, 0, 100)), want: 1, wantOK: true},
		{
			name: "an init container counts by its phase, not added to the apps",
			node: empty,
			req: request(kind(gpuv1alpha1.ContainerInit, app("i", 1, 0, 0)),
				app("a", 1, 16384, 20)),
			want: 0.6, wantOK: true,
		},
		{name: "the whole node's capacity is the measure", node: node(gpu(0), gpu(1), gpu(2), gpu(3)), req: request(app("a", 2, 0, 100)), want: 0.5, wantOK: true},
		{name: "a node that does not fit has no load", node: node(with(gpu(0), used(81920, 100, 1))), req: small},
		{
			name:   "an over-committed node loads at most 1",
			node:   node(with(gpu(0), used(200000, 300, 1), func(d *Device) { d.ShareLimit = 10 }), gpu(1)),
			req:    small,
			want:   1,
			wantOK: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := new(Fitter).Load(tt.node, tt.req)
			if ok != tt.wantOK || math.Abs(got-tt.want) > 0.05 {
				t.Errorf("Load() = %.3f, %v; want %.3f, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestRank(t *testing.T) {
	tests := []struct {
		name   string
		loads  []float64
		fits   []bool
		policy gpurequest.Policy
		want   []int64
	}{
		{name: "binpack gives the busiest node the top score", loads: []float64{0.2, 0.6, 0.5}, fits: []bool{true, true, true}, policy: gpurequest.Binpack, want: []int64{1, 10, 8}},
		{name: "spread gives the emptiest node the top score", loads: []float64{0.2, 0.6, 0.5}, fits: []bool{true, true, true}, policy: gpurequest.Spread, want: []int64{10, 1, 3}},
		{name: "small differences in a nearly empty cluster still decide", loads: []float64{0.011, 0.064}, fits: []bool{true, true}, policy: gpurequest.Binpack, want: []int64{1, 10}},
		{name: "an unknown policy counts as binpack", loads: []float64{0.1, 0.3}, fits: []bool{true, true}, policy: "", want: []int64{1, 10}},
		{name: "equal loads score equally", loads: []float64{0.3, 0.3}, fits: []bool{true, true}, policy: gpurequest.Spread, want: []int64{10, 10}},
		{name: "a node that does not fit scores zero, below all that fit, and sets no bound", loads: []float64{0, 0.5, 0.9}, fits: []bool{false, true, true}, policy: gpurequest.Spread, want: []int64{0, 10, 1}},
		{name: "no node fits", loads: []float64{0, 0}, fits: []bool{false, false}, policy: gpurequest.Binpack, want: []int64{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make([]int64, len(tt.loads))
			for i := range got {
				got[i] = -1 // every score is written, including the zeros
			}
			if Rank(got, tt.loads, tt.fits, tt.policy); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("Rank() = %v, want %v", got, tt.want)
			}
		})
	}
}

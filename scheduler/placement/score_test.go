package placement

import (
	"testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

func TestScore(t *testing.T) {
	half := node(with(gpu(0), used(40960, 50, 1)))
	empty := node(gpu(0))
	small := request(app("a", 1, 8192, 10))
	tests := []struct {
		name   string
		node   *Node
		req    *Request
		policy gpurequest.Policy
		want   int64
	}{
		{name: "binpack scores a busier node higher", node: half, req: small, policy: gpurequest.Binpack, want: 6},
		{name: "binpack scores an emptier node lower", node: empty, req: small, policy: gpurequest.Binpack, want: 1},
		{name: "spread scores an emptier node higher", node: empty, req: small, policy: gpurequest.Spread, want: 9},
		{name: "spread scores a busier node lower", node: half, req: small, policy: gpurequest.Spread, want: 4},
		{name: "an unknown policy counts as binpack", node: half, req: small, policy: "", want: 6},
		{
			name:   "the pod's own placement counts",
			node:   empty,
			req:    request(app("a", 1, 0, 100)),
			policy: gpurequest.Binpack,
			want:   10,
		},
		{
			name: "an init container counts by its phase, not added to the apps",
			node: empty,
			req: request(kind(gpuv1alpha1.ContainerInit, app("i", 1, 0, 0)),
				app("a", 1, 16384, 20)),
			policy: gpurequest.Binpack,
			want:   6,
		},
		{
			name:   "the whole node's capacity is the measure",
			node:   node(gpu(0), gpu(1), gpu(2), gpu(3)),
			req:    request(app("a", 2, 0, 100)),
			policy: gpurequest.Binpack,
			want:   5,
		},
		{
			name:   "a node that does not fit scores zero",
			node:   node(with(gpu(0), used(81920, 100, 1))),
			req:    small,
			policy: gpurequest.Spread,
			want:   0,
		},
		{
			name:   "an over-committed node scores within range",
			node:   node(with(gpu(0), used(200000, 300, 1), func(d *Device) { d.ShareLimit = 10 }), gpu(1)),
			req:    small,
			policy: gpurequest.Binpack,
			want:   10,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Score(tt.node, tt.req, tt.policy); got != tt.want {
				t.Errorf("Score() = %d, want %d", got, tt.want)
			}
		})
	}
}

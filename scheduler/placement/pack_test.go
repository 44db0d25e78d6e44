package placement

import "testing"

func TestPack(t *testing.T) {
	tests := []struct {
		name   string
		node   *Node
		reqs   []*Request
		limit  int
		placed int
		used   []int64
	}{
		{name: "each beside the ones before it", node: node(gpu(0), gpu(1)),
			reqs:   []*Request{request(app("a", 1, 60000, 0)), request(app("b", 1, 60000, 0)), request(app("c", 1, 60000, 0))},
			placed: 2, used: []int64{60000, 60000}},
		{name: "one that does not fit is passed over", node: node(gpu(0)),
			reqs:   []*Request{request(app("a", 1, 60000, 0)), request(app("b", 1, 30000, 0)), request(app("c", 1, 20000, 0))},
			placed: 2, used: []int64{80000}},
		{name: "no more than the limit", node: node(gpu(0), gpu(1)),
			reqs:  []*Request{request(app("a", 1, 10000, 0)), request(app("b", 1, 10000, 0)), request(app("c", 1, 10000, 0))},
			limit: 2, placed: 2, used: []int64{10000, 10000}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ft Fitter
			if got := ft.Pack(tc.node, tc.reqs, tc.limit); got != tc.placed {
				t.Errorf("Pack placed %d, want %d", got, tc.placed)
			}
			for i, want := range tc.used {
				if got := tc.node.Devices[i].UsedMemoryMiB; got != want {
					t.Errorf("GPU %d has %d MiB used, want %d", i, got, want)
				}
			}
		})
	}
}

func TestFragments(t *testing.T) {
	tests := []struct {
		name string
		node *Node
		want int
	}{
		{name: "empty and full GPUs are none", node: node(gpu(0), with(gpu(1), used(81920, 10, 1))), want: 0},
		{name: "a partly held GPU is one", node: node(with(gpu(0), used(40000, 0, 1)), gpu(1)), want: 1},
		{name: "all cores taken is none", node: node(with(gpu(0), used(40000, 100, 1))), want: 0},
		{name: "every share taken is none", node: node(with(gpu(0), used(40000, 10, 10))), want: 0},
		{name: "an unhealthy or cordoned GPU is none",
			node: node(with(gpu(0), used(40000, 0, 1), func(d *Device) { d.Healthy = false }), with(gpu(1), used(40000, 0, 1), func(d *Device) { d.Cordoned = true })),
			want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.node.Fragments(); got != tc.want {
				t.Errorf("Fragments = %d, want %d", got, tc.want)
			}
		})
	}
}

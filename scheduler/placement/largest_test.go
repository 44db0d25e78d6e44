package placement

import (
	"testing"

	"github.com/tessera-gpu/tessera/gpurequest"
)

func TestLargest(t *testing.T) {
	small := func(d *Device) { d.MemoryMiB = 15360 }
	tests := []struct {
		name string
		node *Node
		sel  gpurequest.Selection
		want string // the UUID, "" for none
	}{
		{"the GPU with the most memory, used or not", node(with(gpu(0), small), with(gpu(1), used(81920, 100, 1))), gpurequest.Selection{}, "GPU-1"},
		{"an unhealthy GPU does not count", node(with(gpu(0), small), with(gpu(1), func(d *Device) { d.Healthy = false })), gpurequest.Selection{}, "GPU-0"},
		{"only GPUs of the pod's types count", node(with(gpu(0), small, model("Tesla T4")), gpu(1)), gpurequest.Selection{Types: []string{"t4"}}, "GPU-0"},
		{"none when the pod may use no GPU", node(gpu(0)), gpurequest.Selection{UUIDs: []string{"GPU-9"}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := request(app("a", 1, 20000, 0))
			req.Selection = tc.sel
			got := ""
			if d := Largest(tc.node, req); d != nil {
				got = d.UUID
			}
			if got != tc.want {
				t.Errorf("Largest = %q, want %q", got, tc.want)
			}
		})
	}
}

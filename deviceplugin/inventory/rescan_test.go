package inventory_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu/nvmlgpu"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu/nvmlgpu/nvmlfake"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu/simulated"
	"github.com/tessera-gpu/tessera/deviceplugin/inventory"
)

// migNode is a node with one GPU in MIG mode, holding instance MIG-a, and
// relayout, which destroys it and makes MIG-b and MIG-c, whose capability
// devices the driver's table does not list.
type migNode struct {
	backend  gpu.Discoverer
	parent   string
	capsFile string
	relayout func()
}

func simulatedMIGNode(t *testing.T) migNode {
	path := filepath.Join(t.TempDir(), "gpus.yaml")
	write := func(instances string) {
		content := "gpus:\n- {uuid: GPU-p, model: NVIDIA A100-SXM4-40GB, memoryMiB: 40960, migInstances: [" + instances + "]}\n"
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("{uuid: MIG-a, profile: 3g.20gb, memoryMiB: 19968, gpuInstanceID: 1}")
	return migNode{
		backend:  simulated.New(path, time.Second, testingclock.NewFakeClock(time.Now()), false),
		parent:   "GPU-p",
		capsFile: "/proc/" + gpu.MIGMinorsFile,
		relayout: func() {
			write("{uuid: MIG-b, profile: 1g.5gb, memoryMiB: 4864, gpuInstanceID: 5}, " +
				"{uuid: MIG-c, profile: 2g.10gb, memoryMiB: 9984, gpuInstanceID: 2, capabilityError: no entry gpu0/gi2/access}")
		},
	}
}

func nvmlMIGNode(t *testing.T) migNode {
	node, err := nvmlfake.New(gpus.A100_SXM4_40GB)
	if err != nil {
		t.Fatal(err)
	}
	node.SetMIG(0, nvmlfake.MIGInstance{UUID: "MIG-a", GPUInstanceID: 1, GPUSlices: 3, ComputeSlices: 3, MemoryMB: 19968})
	proc := t.TempDir()
	table := filepath.Join(proc, gpu.MIGMinorsFile)
	if err := os.MkdirAll(filepath.Dir(table), 0o755); err != nil {
		t.Fatal(err)
	}
	caps := "gpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\ngpu0/gi5/access 48\ngpu0/gi5/ci0/access 49\n"
	if err := os.WriteFile(table, []byte(caps), 0o644); err != nil {
		t.Fatal(err)
	}
	return migNode{
		backend:  nvmlgpu.New(node, nvmlgpu.Options{ProcRoot: proc}),
		parent:   node.UUID(0),
		capsFile: table,
		relayout: func() {
			node.SetMIG(0,
				nvmlfake.MIGInstance{UUID: "MIG-b", GPUInstanceID: 5, GPUSlices: 1, ComputeSlices: 1, MemoryMB: 4864},
				nvmlfake.MIGInstance{UUID: "MIG-c", GPUInstanceID: 2, GPUSlices: 2, ComputeSlices: 2, MemoryMB: 9984})
		},
	}
}

func uuids(devices []gpu.Device) []string {
	var out []string
	for _, d := range devices {
		out = append(out, d.UUID)
	}
	slices.Sort(out)
	return out
}

// TestRescanFollowsTheMIGLayout changes a GPU's MIG layout while the
// inventory is served, through each backend, and expects the rescan to
// hand the new instances to the inventory (and so to ListAndWatch, the
// ResourceSlice and the GPUNode), after the CDI spec was prepared for
// them, and to log the instance whose capability devices are missing,
// naming its GPU and the file.
func TestRescanFollowsTheMIGLayout(t *testing.T) {
	tests := []struct {
		name string
		node func(t *testing.T) migNode
	}{
		{name: "simulated GPU file", node: simulatedMIGNode},
		{name: "NVML", node: nvmlMIGNode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
			ctx := klog.NewContext(context.Background(), logger)
			n := tt.node(t)
			found, err := n.backend.Discover(ctx)
			if err != nil {
				t.Fatal(err)
			}
			inv := inventory.New(found)
			var prepared []string
			changes := 0
			r := &inventory.Rescanner{
				Discoverer: n.backend,
				Inventory:  inv,
				Prepare: func(_ context.Context, f gpu.Inventory) error {
					prepared = uuids(f.Devices)
					return nil
				},
				OnChange: func() { changes++ },
			}
			if changed, err := r.Rescan(ctx); changed || err != nil || prepared != nil {
				t.Fatalf("a rescan of the same layout: changed %v, err %v, prepared %v", changed, err, prepared)
			}

			n.relayout()
			changed, err := r.Rescan(ctx)
			if !changed || err != nil {
				t.Fatalf("a rescan of the new layout: changed %v, err %v", changed, err)
			}
			want := []string{"MIG-b", "MIG-c"}
			if got := uuids(inv.Devices()); !slices.Equal(got, want) {
				t.Errorf("inventory %v, want %v", got, want)
			}
			if !slices.Equal(prepared, want) || changes != 1 {
				t.Errorf("prepared %v and %d changes, want %v once", prepared, changes, want)
			}
			c, _ := inv.Device("MIG-c")
			if c.MIG == nil || c.MIG.CapsProblem == nil || c.MIG.CapsProblem.File != n.capsFile {
				t.Errorf("MIG-c %+v does not say its capability devices are missing from %s", c.MIG, n.capsFile)
			}
			if b, _ := inv.Device("MIG-b"); b.MIG == nil || b.MIG.CapsProblem != nil {
				t.Errorf("MIG-b %+v reports a capability problem", b.MIG)
			}
			logged := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
			for _, w := range []string{`gpu="` + n.parent + `"`, `migInstance="MIG-c"`, `file="` + n.capsFile + `"`} {
				if !strings.Contains(logged, w) {
					t.Errorf("no log line with %s:\n%s", w, logged)
				}
			}
			if strings.Contains(logged, `migInstance="MIG-b"`) {
				t.Errorf("MIG-b logged as missing its capability devices:\n%s", logged)
			}
		})
	}
}

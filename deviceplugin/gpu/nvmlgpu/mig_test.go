package nvmlgpu

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu/nvmlgpu/nvmlfake"
)

// TestDiscoverMixedMIGNode finds, on a node with one GPU in MIG mode and
// one not, the MIG-mode GPU's instances in its place, each with its own
// UUID, memory, compute share, parent and profile, and the other GPU
// whole.
func TestDiscoverMixedMIGNode(t *testing.T) {
	node := newFakeNode(t, gpus.A100_SXM4_40GB, gpus.A100_SXM4_40GB)
	node.SetMIG(0,
		nvmlfake.MIGInstance{UUID: "MIG-a", GPUInstanceID: 1, ComputeInstanceID: 0, GPUSlices: 3, ComputeSlices: 3, MemoryMB: 19968},
		nvmlfake.MIGInstance{}, // an empty slot
		nvmlfake.MIGInstance{UUID: "MIG-b", GPUInstanceID: 5, ComputeInstanceID: 0, GPUSlices: 1, ComputeSlices: 1, MemoryMB: 4864},
		nvmlfake.MIGInstance{UUID: "MIG-c", GPUInstanceID: 2, ComputeInstanceID: 1, GPUSlices: 2, ComputeSlices: 1, MemoryMB: 9984},
	)
	proc := t.TempDir()
	caps := "config 1\nmonitor 2\ngpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\ngpu0/gi5/access 48\ngpu0/gi5/ci0/access 49\n"
	if err := os.MkdirAll(filepath.Join(proc, "driver/nvidia-caps"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proc, "driver/nvidia-caps/mig-minors"), []byte(caps), 0o644); err != nil {
		t.Fatal(err)
	}
	b := New(node, Options{ProcRoot: proc})
	inv, err := b.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	model := "Mock NVIDIA A100-SXM4-40GB"
	want := []gpu.Device{
		{UUID: "MIG-a", Index: 0, Model: model + " MIG 3g.20gb", MemoryMiB: 19968, Health: gpu.Healthy(),
			DeviceNodes: []string{"/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap12", "/dev/nvidia-caps/nvidia-cap13"},
			MIG:         &gpu.MIG{ParentUUID: node.UUID(0), Profile: "3g.20gb", GPUInstanceID: 1, ComputePercent: 43}},
		{UUID: "MIG-b", Index: 0, Model: model + " MIG 1g.5gb", MemoryMiB: 4864, Health: gpu.Healthy(),
			DeviceNodes: []string{"/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap48", "/dev/nvidia-caps/nvidia-cap49"},
			MIG:         &gpu.MIG{ParentUUID: node.UUID(0), Profile: "1g.5gb", GPUInstanceID: 5, ComputePercent: 14}},
		// Its capabilities are not in the driver's table: the device file
		// alone, as for the toolkit, which finds them itself, and the
		// problem said.
		{UUID: "MIG-c", Index: 0, Model: model + " MIG 1c.2g.10gb", MemoryMiB: 9984, Health: gpu.Healthy(),
			DeviceNodes: []string{"/dev/nvidia0"},
			MIG: &gpu.MIG{ParentUUID: node.UUID(0), Profile: "1c.2g.10gb", GPUInstanceID: 2, ComputeInstanceID: 1, ComputePercent: 14,
				CapsProblem: &gpu.CapsProblem{File: filepath.Join(proc, gpu.MIGMinorsFile), Reason: "no entry gpu0/gi2/access, gpu0/gi2/ci1/access"}}},
		{UUID: node.UUID(1), Index: 1, Model: model, MemoryMiB: 40960, Health: gpu.Healthy(), DeviceNodes: []string{"/dev/nvidia1"}},
	}
	if !reflect.DeepEqual(inv.Devices, want) {
		t.Errorf("devices\n%+v\nwant\n%+v", inv.Devices, want)
		logDevices(t, inv.Devices)
	}
	// Health is watched on the physical GPUs; their instances follow.
	if got := b.snapshot(); len(got) != 2 || got[0].uuid != node.UUID(0) || got[1].uuid != node.UUID(1) {
		t.Errorf("watched GPUs %+v, want the two physical GPUs", got)
	}
}

// TestDiscoverMIGWithAnUnreadableCapabilityTable serves every instance
// when the driver's table of capability devices cannot be read, each
// saying which file and why.
func TestDiscoverMIGWithAnUnreadableCapabilityTable(t *testing.T) {
	node := newFakeNode(t, gpus.A100_SXM4_40GB)
	node.SetMIG(0, nvmlfake.MIGInstance{UUID: "MIG-a", GPUInstanceID: 1, GPUSlices: 3, ComputeSlices: 3, MemoryMB: 19968})
	proc := t.TempDir() // no driver/nvidia-caps
	inv, err := New(node, Options{ProcRoot: proc}).Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []gpu.Device{{UUID: "MIG-a", Index: 0, Model: "Mock NVIDIA A100-SXM4-40GB MIG 3g.20gb", MemoryMiB: 19968, Health: gpu.Healthy(),
		DeviceNodes: []string{"/dev/nvidia0"},
		MIG: &gpu.MIG{ParentUUID: node.UUID(0), Profile: "3g.20gb", GPUInstanceID: 1, ComputePercent: 43,
			CapsProblem: &gpu.CapsProblem{File: filepath.Join(proc, gpu.MIGMinorsFile), Reason: "no such file or directory"}}}}
	if !reflect.DeepEqual(inv.Devices, want) {
		t.Errorf("devices\n%+v\nwant\n%+v", inv.Devices, want)
		logDevices(t, inv.Devices)
	}
}

func logDevices(t *testing.T, devices []gpu.Device) {
	t.Helper()
	for i, d := range devices {
		if d.MIG != nil {
			t.Logf("%d: %+v %+v %+v", i, d, *d.MIG, d.MIG.CapsProblem)
		}
	}
}

func TestProfileName(t *testing.T) {
	tests := []struct {
		name      string
		attrs     nvml.DeviceAttributes
		parentMiB int64
		want      string
	}{
		{name: "A100 80GB seventh", attrs: nvml.DeviceAttributes{GpuInstanceSliceCount: 1, ComputeInstanceSliceCount: 1, MemorySizeMB: 9856}, parentMiB: 81920, want: "1g.10gb"},
		{name: "A100 80GB whole rounds up to the GPU", attrs: nvml.DeviceAttributes{GpuInstanceSliceCount: 7, ComputeInstanceSliceCount: 7, MemorySizeMB: 80896}, parentMiB: 81920, want: "7g.80gb"},
		{name: "H100 quarter memory", attrs: nvml.DeviceAttributes{GpuInstanceSliceCount: 1, ComputeInstanceSliceCount: 1, MemorySizeMB: 19968}, parentMiB: 81920, want: "1g.20gb"},
		{name: "compute instance smaller than its GPU instance", attrs: nvml.DeviceAttributes{GpuInstanceSliceCount: 4, ComputeInstanceSliceCount: 2, MemorySizeMB: 19968}, parentMiB: 40960, want: "2c.4g.20gb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ProfileName(tt.attrs, tt.parentMiB); got != tt.want {
				t.Errorf("ProfileName = %q, want %q", got, tt.want)
			}
		})
	}
}

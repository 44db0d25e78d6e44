package simulated

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gpus.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadFileErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string
		missing bool
		want    []string
	}{
		{name: "missing file names the file", missing: true, want: []string{"reading simulated GPU file", "no such file"}},
		{name: "corrupt YAML names the file", content: "gpus: [\n", want: []string{"simulated GPU file"}},
		{name: "unknown field is refused", content: "gpus:\n- uuid: a\n  model: m\n  memoryMiB: 1\n  memoryMB: 2\n", want: []string{`unknown field "memoryMB"`}},
		{name: "wrong type names the field", content: "gpus:\n- uuid: a\n  model: m\n  memoryMiB: lots\n", want: []string{"memoryMiB"}},
		{name: "no GPUs", content: "gpus: []\n", want: []string{"gpus: Required value"}},
		{name: "missing uuid", content: "gpus:\n- model: m\n  memoryMiB: 1\n", want: []string{"gpus[0].uuid: Required value"}},
		{name: "duplicate uuid", content: "gpus:\n- {uuid: a, model: m, memoryMiB: 1}\n- {uuid: a, model: m, memoryMiB: 1}\n", want: []string{"gpus[1].uuid: Duplicate value"}},
		{name: "missing model", content: "gpus:\n- {uuid: a, memoryMiB: 1}\n", want: []string{"gpus[0].model: Required value"}},
		{name: "zero memory", content: "gpus:\n- {uuid: a, model: m, memoryMiB: 0}\n", want: []string{"gpus[0].memoryMiB", "must be greater than 0"}},
		{name: "negative index", content: "gpus:\n- {uuid: a, model: m, memoryMiB: 1, index: -1}\n", want: []string{"gpus[0].index", "must be 0 or greater"}},
		{name: "duplicate index", content: "gpus:\n- {uuid: a, model: m, memoryMiB: 1, index: 1}\n- {uuid: b, model: m, memoryMiB: 1}\n", want: []string{"gpus[1].index: Duplicate value"}},
		{name: "numa below -1", content: "gpus:\n- {uuid: a, model: m, memoryMiB: 1, numaNode: -2}\n", want: []string{"gpus[0].numaNode"}},
		{name: "unknown health", content: "gpus:\n- {uuid: a, model: m, memoryMiB: 1, health: Sick}\n", want: []string{"gpus[0].health: Unsupported value"}},
		{name: "used memory above total", content: "gpus:\n- {uuid: a, model: m, memoryMiB: 1, memoryUsedMiB: 2}\n", want: []string{"gpus[0].memoryUsedMiB"}},
		{name: "MIG instance bigger than its GPU", content: "gpus:\n- {uuid: a, model: m, memoryMiB: 10, migInstances: [{uuid: m1, profile: 1g.10gb, memoryMiB: 11}]}\n", want: []string{"gpus[0].migInstances[0].memoryMiB"}},
		{name: "MIG instance without a profile", content: "gpus:\n- {uuid: a, model: m, memoryMiB: 10, migInstances: [{uuid: m1, memoryMiB: 5}]}\n", want: []string{"gpus[0].migInstances[0].profile: Required value"}},
		{name: "MIG instance with its GPU's UUID", content: "gpus:\n- {uuid: a, model: m, memoryMiB: 10, migInstances: [{uuid: a, profile: 1g.5gb, memoryMiB: 5}]}\n", want: []string{"gpus[0].migInstances[0].uuid: Duplicate value"}},
		{name: "MIG capability error too long for the GPUNode", content: "gpus:\n- {uuid: a, model: m, memoryMiB: 10, migInstances: [{uuid: m1, profile: 1g.5gb, memoryMiB: 5, capabilityError: " + strings.Repeat("x", 513) + "}]}\n",
			want: []string{"gpus[0].migInstances[0].capabilityError: Too long"}},
		{name: "utilisation above 100", content: "gpus:\n- {uuid: a, model: m, memoryMiB: 1, utilizationPercent: 101}\n", want: []string{"gpus[0].utilizationPercent"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "absent.yaml")
			if !tt.missing {
				path = writeFile(t, tt.content)
			}
			_, err := ReadFile(path)
			if err == nil {
				t.Fatalf("ReadFile succeeded, want an error")
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file %s", err, path)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestReadFileDevices(t *testing.T) {
	path := writeFile(t, `
gpus:
- uuid: GPU-a
  model: NVIDIA A100-SXM4-40GB
  memoryMiB: 40960
  numaNode: 1
  index: 1
- uuid: GPU-b
  model: NVIDIA A30
  memoryMiB: 24576
  index: 0
  health: Unhealthy
  healthMessage: XID 79
- uuid: GPU-c
  model: NVIDIA A30
  memoryMiB: 24576
  index: 2
  health: Unhealthy
`)
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := f.Devices()
	want := []gpu.Device{
		{UUID: "GPU-a", Index: 1, DeviceNodes: []string{"/dev/nvidia1"}, Model: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960, NUMANode: 1, Health: gpu.Healthy()},
		{UUID: "GPU-b", Index: 0, DeviceNodes: []string{"/dev/nvidia0"}, Model: "NVIDIA A30", MemoryMiB: 24576, NUMANode: -1, Health: gpu.Unhealthy("XID 79")},
		{UUID: "GPU-c", Index: 2, DeviceNodes: []string{"/dev/nvidia2"}, Model: "NVIDIA A30", MemoryMiB: 24576, NUMANode: -1, Health: gpu.Unhealthy("marked unhealthy in the simulated GPU file")},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d devices, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("device %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestReadFileMIGInstancesReplaceTheirGPU(t *testing.T) {
	path := writeFile(t, `
gpus:
- uuid: GPU-mig
  model: NVIDIA A100-SXM4-80GB
  memoryMiB: 81920
  numaNode: 1
  migInstances:
  - {uuid: MIG-1, profile: 3g.40gb, memoryMiB: 40192, gpuInstanceID: 2, computePercent: 43}
  - {uuid: MIG-2, profile: 1g.10gb, memoryMiB: 9856, gpuInstanceID: 9, computeInstanceID: 0, computePercent: 14, capabilityError: permission denied}
- uuid: GPU-whole
  model: NVIDIA A100-SXM4-80GB
  memoryMiB: 81920
`)
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []gpu.Device{
		{UUID: "MIG-1", Index: 0, Model: "NVIDIA A100-SXM4-80GB MIG 3g.40gb", MemoryMiB: 40192, NUMANode: 1, Health: gpu.Healthy(), DeviceNodes: []string{"/dev/nvidia0"},
			MIG: &gpu.MIG{ParentUUID: "GPU-mig", Profile: "3g.40gb", GPUInstanceID: 2, ComputePercent: 43}},
		{UUID: "MIG-2", Index: 0, Model: "NVIDIA A100-SXM4-80GB MIG 1g.10gb", MemoryMiB: 9856, NUMANode: 1, Health: gpu.Healthy(), DeviceNodes: []string{"/dev/nvidia0"},
			MIG: &gpu.MIG{ParentUUID: "GPU-mig", Profile: "1g.10gb", GPUInstanceID: 9, ComputePercent: 14,
				CapsProblem: &gpu.CapsProblem{File: "/proc/driver/nvidia-caps/mig-minors", Reason: "permission denied"}}},
		{UUID: "GPU-whole", Index: 1, Model: "NVIDIA A100-SXM4-80GB", MemoryMiB: 81920, NUMANode: -1, Health: gpu.Healthy(), DeviceNodes: []string{"/dev/nvidia1"}},
	}
	if got := f.Devices(); !reflect.DeepEqual(got, want) {
		t.Errorf("devices\n%+v\nwant\n%+v", got, want)
	}
}

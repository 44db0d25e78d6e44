package nvmlgpu

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

func TestDiscoverMixedServer(t *testing.T) {
	node := newFakeNode(t, gpus.A100_SXM4_40GB, gpus.A100_SXM4_40GB, gpus.H100_SXM5_80GB, gpus.H100_SXM5_80GB, gpus.H100_SXM5_80GB)
	b := New(node, Options{})
	inv, err := b.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if inv.DriverVersion != "550.54.15" {
		t.Errorf("driver version %q", inv.DriverVersion)
	}
	want := []gpu.Device{
		{UUID: node.UUID(0), Index: 0, DeviceNodes: []string{"/dev/nvidia0"}, Model: "Mock NVIDIA A100-SXM4-40GB", MemoryMiB: 40960, NUMANode: 0, Health: gpu.Healthy()},
		{UUID: node.UUID(1), Index: 1, DeviceNodes: []string{"/dev/nvidia1"}, Model: "Mock NVIDIA A100-SXM4-40GB", MemoryMiB: 40960, NUMANode: 0, Health: gpu.Healthy()},
		{UUID: node.UUID(2), Index: 2, DeviceNodes: []string{"/dev/nvidia2"}, Model: "NVIDIA H100 80GB HBM3", MemoryMiB: 81920, NUMANode: 0, Health: gpu.Healthy()},
		{UUID: node.UUID(3), Index: 3, DeviceNodes: []string{"/dev/nvidia3"}, Model: "NVIDIA H100 80GB HBM3", MemoryMiB: 81920, NUMANode: 0, Health: gpu.Healthy()},
		{UUID: node.UUID(4), Index: 4, DeviceNodes: []string{"/dev/nvidia4"}, Model: "NVIDIA H100 80GB HBM3", MemoryMiB: 81920, NUMANode: 1, Health: gpu.Healthy()},
	}
	if len(inv.Devices) != len(want) {
		t.Fatalf("found %d GPUs, want %d", len(inv.Devices), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(inv.Devices[i], want[i]) {
			t.Errorf("GPU %d = %+v, want %+v", i, inv.Devices[i], want[i])
		}
	}
	if err := b.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if n := len(node.ShutdownCalls()); n != 1 {
		t.Errorf("NVML shut down %d times, want 1", n)
	}
}

func TestDiscoverWithoutDriver(t *testing.T) {
	tests := []struct {
		name     string
		ret      nvml.Return
		noDriver bool
		want     string
	}{
		{name: "library missing says to install the driver", ret: nvml.ERROR_LIBRARY_NOT_FOUND, noDriver: true, want: "libnvidia-ml.so.1"},
		{name: "kernel driver not loaded", ret: nvml.ERROR_DRIVER_NOT_LOADED, noDriver: true, want: "kernel driver is not loaded"},
		{name: "no permission says to run privileged", ret: nvml.ERROR_NO_PERMISSION, noDriver: true, want: "privileged"},
		{name: "other failure names NVML", ret: nvml.ERROR_UNKNOWN, want: "initialising NVML: ERROR_UNKNOWN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := newFakeNode(t, gpus.A100_SXM4_40GB)
			node.InitFunc = func() nvml.Return { return tt.ret }
			b := New(node, Options{})
			_, err := b.Discover(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Discover error %v, want one containing %q", err, tt.want)
			}
			if errors.Is(err, ErrNoDriver) != tt.noDriver {
				t.Errorf("errors.Is(err, ErrNoDriver) = %v, want %v", !tt.noDriver, tt.noDriver)
			}
			if err := b.Close(); err != nil || len(node.ShutdownCalls()) != 0 {
				t.Errorf("Close after a failed Init: err %v, %d shutdowns; want nothing shut down", err, len(node.ShutdownCalls()))
			}
		})
	}
}

func TestDiscoverReadFailureNamesTheGPU(t *testing.T) {
	node := newFakeNode(t, gpus.A100_SXM4_40GB, gpus.A100_SXM4_40GB)
	node.Device(1).GetNameFunc = func() (string, nvml.Return) { return "", nvml.ERROR_GPU_IS_LOST }
	_, err := New(node, Options{}).Discover(context.Background())
	if err == nil || !strings.Contains(err.Error(), "reading GPU 1: name: ERROR_GPU_IS_LOST") {
		t.Fatalf("Discover error %v, want it to name GPU 1 and the failed query", err)
	}
}

func TestNUMANodeFromSysfs(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    int
	}{
		{name: "sysfs node", content: "1\n", want: 1},
		{name: "sysfs says none", content: "-1\n", want: -1},
		{name: "no sysfs entry", want: -1},
		{name: "garbage in sysfs", content: "x\n", want: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			node := newFakeNode(t, gpus.A100_SXM4_40GB)
			d := node.Device(0)
			d.GetNumaNodeIdFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
			d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
				return nvml.PciInfo{Domain: 0, Bus: 0x3b, Device: 0}, nvml.SUCCESS
			}
			if tt.content != "" {
				dir := filepath.Join(root, "bus", "pci", "devices", "0000:3b:00.0")
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "numa_node"), []byte(tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			inv, err := New(node, Options{SysfsRoot: root}).Discover(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := inv.Devices[0].NUMANode; got != tt.want {
				t.Errorf("NUMA node %d, want %d", got, tt.want)
			}
		})
	}
}

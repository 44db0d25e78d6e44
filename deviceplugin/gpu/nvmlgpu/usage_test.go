package nvmlgpu

import (
	"reflect"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"k8s.io/klog/v2/ktesting"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

func TestUsage(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	node := newFakeNode(t, gpus.A100_SXM4_40GB, gpus.H100_SXM5_80GB, gpus.H100_SXM5_80GB)
	node.SetMemoryUsed(0, 3<<30)
	node.SetUtilization(0, 42)
	// A process that is both compute and graphics counts once.
	node.SetProcesses(0,
		[]nvml.ProcessInfo{{Pid: 100, UsedGpuMemory: 1 << 30}, {Pid: 200, UsedGpuMemory: 2 << 30}, {Pid: 300, UsedGpuMemory: ^uint64(0)}},
		[]nvml.ProcessInfo{{Pid: 200, UsedGpuMemory: 2 << 30}})
	node.Device(1).GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED }

	b := New(node, Options{})
	if _, err := b.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	node.SetMemoryReturn(2, nvml.ERROR_GPU_IS_LOST)
	got, err := b.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []gpu.Usage{
		{
			UUID: node.UUID(0), MemoryUsedBytes: 3 << 30, MemoryTotalBytes: 40960 << 20, Utilization: 0.42,
			Processes: []gpu.Process{{PID: 100, MemoryUsedBytes: 1 << 30}, {PID: 200, MemoryUsedBytes: 2 << 30}},
		},
		// Utilisation unknown; the lost GPU 2 is left out.
		{UUID: node.UUID(1), MemoryTotalBytes: 81920 << 20, Utilization: -1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Usage =\n%+v\nwant\n%+v", got, want)
	}
}

package nvmlgpu

import (
	"context"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

// notAvailable is NVML's value for a process memory it cannot read.
const notAvailable = ^uint64(0)

// Usage measures each GPU's memory, utilisation and processes. A GPU that
// cannot be read is left out and logged; it does not hide the others.
func (b *Backend) Usage(ctx context.Context) ([]gpu.Usage, error) {
	logger := klog.FromContext(ctx)
	devices := b.snapshot()
	out := make([]gpu.Usage, 0, len(devices))
	for _, d := range devices {
		u, err := usageOf(d)
		if err != nil {
			logger.V(2).Info("Could not measure GPU", "uuid", d.uuid, "err", err)
			continue
		}
		out = append(out, u)
	}
	return out, nil
}

func usageOf(d *device) (gpu.Usage, error) {
	mem, ret := d.handle.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return gpu.Usage{}, fmt.Errorf("memory: %v", ret)
	}
	u := gpu.Usage{UUID: d.uuid, MemoryUsedBytes: mem.Used, MemoryTotalBytes: mem.Total, Utilization: -1}
	if rates, ret := d.handle.GetUtilizationRates(); ret == nvml.SUCCESS {
		u.Utilization = float64(rates.Gpu) / 100
	}
	// A process may be listed as both compute and graphics; it holds one
	// amount of memory.
	byPID := map[uint32]uint64{}
	var order []uint32
	for _, list := range []func() ([]nvml.ProcessInfo, nvml.Return){d.handle.GetComputeRunningProcesses, d.handle.GetGraphicsRunningProcesses} {
		procs, ret := list()
		if ret != nvml.SUCCESS {
			continue
		}
		for _, p := range procs {
			if p.UsedGpuMemory == notAvailable {
				continue
			}
			if _, seen := byPID[p.Pid]; !seen {
				order = append(order, p.Pid)
			}
			byPID[p.Pid] = max(byPID[p.Pid], p.UsedGpuMemory)
		}
	}
	for _, pid := range order {
		u.Processes = append(u.Processes, gpu.Process{PID: pid, MemoryUsedBytes: byPID[pid]})
	}
	return u, nil
}

package nvmlgpu

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

// Discover initialises NVML and lists the GPUs. It may be called again
// while health is watched, as the plugin does to find a changed MIG
// layout: a GPU found before keeps the health the watch gave it, and so do
// its MIG instances, old or new. A GPU found only then is probed but not
// registered for health events until the plugin restarts.
func (b *Backend) Discover(ctx context.Context) (gpu.Inventory, error) {
	logger := klog.FromContext(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.init(); err != nil {
		return gpu.Inventory{}, err
	}
	version, ret := b.lib.SystemGetDriverVersion()
	if ret != nvml.SUCCESS {
		return gpu.Inventory{}, fmt.Errorf("reading the driver version: %v", ret)
	}
	count, ret := b.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return gpu.Inventory{}, fmt.Errorf("counting GPUs: %v", ret)
	}
	known := make(map[string]*device, len(b.devices))
	for _, d := range b.devices {
		known[d.uuid] = d
	}
	inv := gpu.Inventory{DriverVersion: version}
	var watched []*device
	for i := range count {
		handle, ret := b.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return gpu.Inventory{}, fmt.Errorf("opening GPU %d: %v", i, ret)
		}
		d, minor, err := b.describe(i, handle)
		if err != nil {
			return gpu.Inventory{}, fmt.Errorf("reading GPU %d: %w", i, err)
		}
		// The health watch follows the physical GPU, MIG mode or not.
		w, ok := known[d.UUID]
		if !ok {
			w = &device{uuid: d.UUID, handle: handle, healthy: true}
		}
		d.Health = w.health()
		watched = append(watched, w)
		mig, err := migEnabled(handle)
		if err != nil {
			return gpu.Inventory{}, fmt.Errorf("reading GPU %d: %w", i, err)
		}
		if !mig {
			logger.V(4).Info("Found GPU", "uuid", d.UUID, "index", d.Index, "model", d.Model, "memoryMiB", d.MemoryMiB, "numaNode", d.NUMANode)
			inv.Devices = append(inv.Devices, d)
			continue
		}
		if b.opts.DynamicMIG {
			if d.MIGGeometry, err = geometry(handle, d.MemoryMiB); err != nil {
				return gpu.Inventory{}, fmt.Errorf("reading the MIG geometry of GPU %d: %w", i, err)
			}
			logger.V(4).Info("Found GPU in MIG mode for instances made on demand", "uuid", d.UUID, "index", d.Index, "profiles", len(d.MIGGeometry.Profiles))
			inv.Devices = append(inv.Devices, d)
			continue
		}
		// CUDA runs only on a MIG-mode GPU's instances: they are the
		// devices, never the GPU itself.
		instances, err := b.migInstances(d, handle, minor)
		if err != nil {
			return gpu.Inventory{}, fmt.Errorf("reading the MIG instances of GPU %d: %w", i, err)
		}
		logger.V(4).Info("Found GPU in MIG mode", "uuid", d.UUID, "index", d.Index, "model", d.Model, "instances", len(instances))
		for _, m := range instances {
			logger.V(4).Info("Found MIG instance", "uuid", m.UUID, "parent", d.UUID, "profile", m.MIG.Profile, "memoryMiB", m.MemoryMiB)
		}
		inv.Devices = append(inv.Devices, instances...)
	}
	b.devices = watched
	return inv, nil
}

// describe reads a physical GPU and its minor number.
func (b *Backend) describe(index int, h nvml.Device) (gpu.Device, int, error) {
	uuid, ret := h.GetUUID()
	if ret != nvml.SUCCESS {
		return gpu.Device{}, 0, fmt.Errorf("UUID: %v", ret)
	}
	name, ret := h.GetName()
	if ret != nvml.SUCCESS {
		return gpu.Device{}, 0, fmt.Errorf("name: %v", ret)
	}
	mem, ret := h.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return gpu.Device{}, 0, fmt.Errorf("memory: %v", ret)
	}
	minor, ret := h.GetMinorNumber()
	if ret != nvml.SUCCESS {
		return gpu.Device{}, 0, fmt.Errorf("minor number: %v", ret)
	}
	return gpu.Device{
		UUID:        uuid,
		Index:       index,
		Model:       name,
		MemoryMiB:   int64(mem.Total >> 20),
		NUMANode:    b.numaNode(h),
		Health:      gpu.Healthy(),
		DeviceNodes: []string{gpu.DeviceNode(minor)},
	}, minor, nil
}

// numaNode asks NVML, and for drivers that cannot answer, the PCI device in
// sysfs; -1 when neither knows.
func (b *Backend) numaNode(h nvml.Device) int {
	if n, ret := h.GetNumaNodeId(); ret == nvml.SUCCESS {
		return n
	}
	pci, ret := h.GetPciInfo()
	if ret != nvml.SUCCESS {
		return -1
	}
	busID := fmt.Sprintf("%04x:%02x:%02x.0", pci.Domain, pci.Bus, pci.Device)
	data, err := os.ReadFile(filepath.Join(b.opts.SysfsRoot, "bus", "pci", "devices", busID, "numa_node"))
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || n < 0 {
		return -1
	}
	return n
}

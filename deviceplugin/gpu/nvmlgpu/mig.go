package nvmlgpu

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

// migEnabled reports whether the GPU runs in MIG mode. A GPU that cannot
// (NVML answers NOT_SUPPORTED) does not.
func migEnabled(h nvml.Device) (bool, error) {
	current, _, ret := h.GetMigMode()
	switch ret {
	case nvml.SUCCESS:
		return current == nvml.DEVICE_MIG_ENABLE, nil
	case nvml.ERROR_NOT_SUPPORTED:
		return false, nil
	}
	return false, fmt.Errorf("MIG mode: %v", ret)
}

// migInstances returns the MIG instances the administrator made on the
// parent GPU, each a device of its own in the parent's place. A GPU in MIG
// mode with no instance yields none: CUDA cannot run on it.
func (b *Backend) migInstances(parent gpu.Device, h nvml.Device, minor int) ([]gpu.Device, error) {
	count, ret := h.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("MIG device count: %v", ret)
	}
	var out []gpu.Device
	for i := range count {
		mh, ret := h.GetMigDeviceHandleByIndex(i)
		if ret == nvml.ERROR_NOT_FOUND || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue // no instance in this slot
		}
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("MIG device %d: %v", i, ret)
		}
		d, err := b.describeMIG(parent, mh, count, minor)
		if err != nil {
			return nil, fmt.Errorf("MIG device %d: %w", i, err)
		}
		out = append(out, d)
	}
	return out, nil
}

func (b *Backend) describeMIG(parent gpu.Device, mh nvml.Device, slots, minor int) (gpu.Device, error) {
	uuid, ret := mh.GetUUID()
	if ret != nvml.SUCCESS {
		return gpu.Device{}, fmt.Errorf("UUID: %v", ret)
	}
	attrs, ret := mh.GetAttributes()
	if ret != nvml.SUCCESS {
		return gpu.Device{}, fmt.Errorf("attributes: %v", ret)
	}
	gi, ret := mh.GetGpuInstanceId()
	if ret != nvml.SUCCESS {
		return gpu.Device{}, fmt.Errorf("GPU instance: %v", ret)
	}
	ci, ret := mh.GetComputeInstanceId()
	if ret != nvml.SUCCESS {
		return gpu.Device{}, fmt.Errorf("compute instance: %v", ret)
	}
	profile := ProfileName(attrs, parent.MemoryMiB)
	// The instance's capability devices let a container open it; a
	// runtime reading the CDI spec needs them, the toolkit finds its own.
	// Without them the instance is still served, and the problem reported.
	caps, problem := migCaps(b.opts.ProcRoot, minor, gi, ci)
	return gpu.Device{
		UUID:        uuid,
		Index:       parent.Index,
		Model:       parent.Model + " MIG " + profile,
		MemoryMiB:   int64(attrs.MemorySizeMB),
		NUMANode:    parent.NUMANode,
		Health:      parent.Health,
		DeviceNodes: append([]string{gpu.DeviceNode(minor)}, caps...),
		MIG: &gpu.MIG{
			ParentUUID:        parent.UUID,
			Profile:           profile,
			GPUInstanceID:     gi,
			ComputeInstanceID: ci,
			ComputePercent:    int(math.Round(100 * float64(attrs.ComputeInstanceSliceCount) / float64(max(slots, 1)))),
			CapsProblem:       problem,
		},
	}, nil
}

// ProfileName names a MIG instance as NVIDIA does: compute slices, then
// memory in GB, such as 1g.10gb, with the compute instance's slices in
// front when it holds fewer than its GPU instance (1c.2g.20gb). The memory
// is the instance's share of the GPU rounded up to an eighth, as NVIDIA
// rounds it, so an 80 GB GPU's seventh is 10gb, not 9gb.
func ProfileName(attrs nvml.DeviceAttributes, parentMemoryMiB int64) string {
	gb := int64(math.Ceil(float64(attrs.MemorySizeMB) / 1024))
	if parentMemoryMiB > 0 {
		eighths := math.Ceil(8 * float64(attrs.MemorySizeMB) / float64(parentMemoryMiB))
		gb = int64(math.Ceil(eighths / 8 * float64(parentMemoryMiB) / 1024))
	}
	name := fmt.Sprintf("%dg.%dgb", attrs.GpuInstanceSliceCount, gb)
	if attrs.ComputeInstanceSliceCount != attrs.GpuInstanceSliceCount {
		name = fmt.Sprintf("%dc.%s", attrs.ComputeInstanceSliceCount, name)
	}
	return name
}

// migCaps returns the capability device files of a GPU instance and its
// compute instance, from the driver's table of their minor numbers, or
// why they could not be found there.
func migCaps(procRoot string, gpuMinor, gi, ci int) ([]string, *gpu.CapsProblem) {
	path := filepath.Join(procRoot, gpu.MIGMinorsFile)
	f, err := os.Open(path)
	if err != nil {
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			err = pathErr.Err
		}
		return nil, &gpu.CapsProblem{File: path, Reason: err.Error()}
	}
	defer f.Close()
	want := []string{
		fmt.Sprintf("gpu%d/gi%d/access", gpuMinor, gi),
		fmt.Sprintf("gpu%d/gi%d/ci%d/access", gpuMinor, gi, ci),
	}
	minors := map[string]string{}
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		name, minor, ok := strings.Cut(strings.TrimSpace(scanner.Text()), " ")
		if _, err := strconv.Atoi(minor); ok && err == nil && slices.Contains(want, name) {
			minors[name] = minor
		}
	}
	if err := scanner.Err(); err != nil {
		return nil, &gpu.CapsProblem{File: path, Reason: err.Error()}
	}
	var caps, missing []string
	for _, name := range want {
		if minor, ok := minors[name]; ok {
			caps = append(caps, "/dev/nvidia-caps/nvidia-cap"+minor)
		} else {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, &gpu.CapsProblem{File: path, Reason: "no entry " + strings.Join(missing, ", ")}
	}
	return caps, nil
}

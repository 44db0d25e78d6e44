package nvmlgpu

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

var _ gpu.MIGMaker = (*Backend)(nil)

// maxGeometryItems is the API's bound on a geometry's profiles and on a
// profile's placements; maxSlices its bound on a GPU's memory slices.
const (
	maxGeometryItems = 32
	maxSlices        = 16
)

// gpuProfiles returns the GPU instance profiles the GPU offers, in NVML's
// order, each with its profile index (what GetGpuInstanceProfileInfo
// takes), leaving out variants named like an earlier profile (the
// media-extension ones, +me).
func gpuProfiles(h nvml.Device, memoryMiB int64) ([]nvml.GpuInstanceProfileInfo, []string, error) {
	var (
		infos []nvml.GpuInstanceProfileInfo
		names []string
	)
	for p := range nvml.GPU_INSTANCE_PROFILE_COUNT {
		info, ret := h.GetGpuInstanceProfileInfo(p)
		switch {
		case ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_INVALID_ARGUMENT:
			continue
		case ret != nvml.SUCCESS:
			return nil, nil, fmt.Errorf("MIG profile %d: %v", p, ret)
		}
		attrs := nvml.DeviceAttributes{GpuInstanceSliceCount: info.SliceCount, ComputeInstanceSliceCount: info.SliceCount, MemorySizeMB: info.MemorySizeMB}
		name := ProfileName(attrs, memoryMiB)
		if slices.Contains(names, name) || len(names) == maxGeometryItems {
			continue
		}
		infos, names = append(infos, info), append(names, name)
	}
	return infos, names, nil
}

// geometry reads how a GPU in MIG mode can be cut: each profile with its
// memory, its share of the compute (its slices of the largest profile's)
// and where it may lie.
func geometry(h nvml.Device, memoryMiB int64) (*gpuv1alpha1.MIGGeometry, error) {
	infos, names, err := gpuProfiles(h, memoryMiB)
	if err != nil {
		return nil, err
	}
	var most uint32
	for _, info := range infos {
		most = max(most, info.SliceCount)
	}
	g := &gpuv1alpha1.MIGGeometry{}
	for i, info := range infos {
		placements, ret := h.GetGpuInstancePossiblePlacements(&info)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("placements of MIG profile %s: %v", names[i], ret)
		}
		p := gpuv1alpha1.MIGProfile{
			Name:           names[i],
			ProfileID:      int32(info.Id),
			MemoryMiB:      int64(info.MemorySizeMB),
			ComputePercent: int32(math.Round(100 * float64(info.SliceCount) / float64(max(most, 1)))),
		}
		for _, pl := range placements {
			if pl.Start+pl.Size <= maxSlices && len(p.Placements) < maxGeometryItems {
				p.Placements = append(p.Placements, gpuv1alpha1.MIGPlacement{Start: int32(pl.Start), Size: int32(pl.Size)})
			}
		}
		if len(p.Placements) > 0 {
			g.Profiles = append(g.Profiles, p)
		}
	}
	if len(g.Profiles) == 0 {
		return nil, fmt.Errorf("the GPU offers no MIG profile")
	}
	return g, nil
}

// openGPU opens the GPU with the UUID.
func (b *Backend) openGPU(uuid string) (nvml.Device, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.init(); err != nil {
		return nil, err
	}
	h, ret := b.lib.DeviceGetHandleByUUID(uuid)
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("opening GPU %s: %v", uuid, ret)
	}
	return h, nil
}

// MIGInstances lists the GPU instances on the GPU, profile by profile.
func (b *Backend) MIGInstances(_ context.Context, gpuUUID string) ([]gpu.MadeMIG, error) {
	h, err := b.openGPU(gpuUUID)
	if err != nil {
		return nil, err
	}
	var out []gpu.MadeMIG
	for p := range nvml.GPU_INSTANCE_PROFILE_COUNT {
		info, ret := h.GetGpuInstanceProfileInfo(p)
		if ret != nvml.SUCCESS {
			continue
		}
		gis, ret := h.GetGpuInstances(&info)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("listing the GPU instances of profile %d on GPU %s: %v", info.Id, gpuUUID, ret)
		}
		for _, gi := range gis {
			m, err := madeMIG(h, gi)
			if err != nil {
				return nil, fmt.Errorf("GPU %s: %w", gpuUUID, err)
			}
			out = append(out, m)
		}
	}
	return out, nil
}

// madeMIG describes a GPU instance, with the UUID of its MIG device.
func madeMIG(h nvml.Device, gi nvml.GpuInstance) (gpu.MadeMIG, error) {
	info, ret := gi.GetInfo()
	if ret != nvml.SUCCESS {
		return gpu.MadeMIG{}, fmt.Errorf("reading a GPU instance: %v", ret)
	}
	m := gpu.MadeMIG{
		ProfileID:     int32(info.ProfileId),
		Placement:     gpuv1alpha1.MIGPlacement{Start: int32(info.Placement.Start), Size: int32(info.Placement.Size)},
		GPUInstanceID: int(info.Id),
	}
	count, ret := h.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return m, fmt.Errorf("MIG device count: %v", ret)
	}
	for i := range count {
		mh, ret := h.GetMigDeviceHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		if id, ret := mh.GetGpuInstanceId(); ret != nvml.SUCCESS || id != int(info.Id) {
			continue
		}
		uuid, ret := mh.GetUUID()
		if ret != nvml.SUCCESS {
			return m, fmt.Errorf("UUID of the MIG device of GPU instance %d: %v", info.Id, ret)
		}
		m.UUID = uuid
		break
	}
	return m, nil
}

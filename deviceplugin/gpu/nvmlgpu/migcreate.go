package nvmlgpu

import (
	"context"
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

// CreateMIG makes a GPU instance of the profile at the placement and a
// compute instance that fills it; when the compute instance fails, the GPU
// instance is destroyed again, so that nothing half-made is left.
func (b *Backend) CreateMIG(_ context.Context, gpuUUID string, profileID int32, placement gpuv1alpha1.MIGPlacement) (gpu.MadeMIG, error) {
	h, err := b.openGPU(gpuUUID)
	if err != nil {
		return gpu.MadeMIG{}, err
	}
	info, err := profileByID(h, profileID)
	if err != nil {
		return gpu.MadeMIG{}, fmt.Errorf("GPU %s: %w", gpuUUID, err)
	}
	pl := nvml.GpuInstancePlacement{Start: uint32(placement.Start), Size: uint32(placement.Size)}
	gi, ret := h.CreateGpuInstanceWithPlacement(&info, &pl)
	if ret != nvml.SUCCESS {
		return gpu.MadeMIG{}, fmt.Errorf("creating a GPU instance of profile %d at memory slice %d on GPU %s: %v", profileID, placement.Start, gpuUUID, ret)
	}
	if err := fillWithComputeInstance(gi, info.SliceCount); err != nil {
		if ret := gi.Destroy(); ret != nvml.SUCCESS {
			err = errors.Join(err, fmt.Errorf("destroying the GPU instance again: %v", ret))
		}
		return gpu.MadeMIG{}, fmt.Errorf("GPU %s: %w", gpuUUID, err)
	}
	m, err := madeMIG(h, gi)
	if err != nil {
		return gpu.MadeMIG{}, fmt.Errorf("GPU %s: %w", gpuUUID, err)
	}
	if m.UUID == "" {
		return m, fmt.Errorf("GPU %s: the new GPU instance %d has no MIG device", gpuUUID, m.GPUInstanceID)
	}
	return m, nil
}

// profileByID finds the GPU instance profile with NVML's profile ID.
func profileByID(h nvml.Device, profileID int32) (nvml.GpuInstanceProfileInfo, error) {
	for p := range nvml.GPU_INSTANCE_PROFILE_COUNT {
		if info, ret := h.GetGpuInstanceProfileInfo(p); ret == nvml.SUCCESS && int32(info.Id) == profileID {
			return info, nil
		}
	}
	return nvml.GpuInstanceProfileInfo{}, fmt.Errorf("no MIG profile with ID %d", profileID)
}

// fillWithComputeInstance makes, in the GPU instance, the compute instance
// with all its slices.
func fillWithComputeInstance(gi nvml.GpuInstance, slices uint32) error {
	for p := range nvml.COMPUTE_INSTANCE_PROFILE_COUNT {
		info, ret := gi.GetComputeInstanceProfileInfo(p, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
		if ret != nvml.SUCCESS || info.SliceCount != slices {
			continue
		}
		if _, ret := gi.CreateComputeInstance(&info); ret != nvml.SUCCESS {
			return fmt.Errorf("creating a compute instance: %v", ret)
		}
		return nil
	}
	return fmt.Errorf("no compute instance profile of %d slices", slices)
}

// DestroyMIG destroys the GPU instance's compute instances, then the GPU
// instance.
func (b *Backend) DestroyMIG(_ context.Context, gpuUUID string, gpuInstanceID int) error {
	h, err := b.openGPU(gpuUUID)
	if err != nil {
		return err
	}
	gi, ret := h.GetGpuInstanceById(gpuInstanceID)
	if ret != nvml.SUCCESS {
		return fmt.Errorf("opening GPU instance %d on GPU %s: %v", gpuInstanceID, gpuUUID, ret)
	}
	for p := range nvml.COMPUTE_INSTANCE_PROFILE_COUNT {
		info, ret := gi.GetComputeInstanceProfileInfo(p, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
		if ret != nvml.SUCCESS {
			continue
		}
		cis, ret := gi.GetComputeInstances(&info)
		if ret != nvml.SUCCESS {
			return fmt.Errorf("listing the compute instances of GPU instance %d on GPU %s: %v", gpuInstanceID, gpuUUID, ret)
		}
		for _, ci := range cis {
			if ret := ci.Destroy(); ret != nvml.SUCCESS {
				return fmt.Errorf("destroying a compute instance of GPU instance %d on GPU %s: %v", gpuInstanceID, gpuUUID, ret)
			}
		}
	}
	if ret := gi.Destroy(); ret != nvml.SUCCESS {
		return fmt.Errorf("destroying GPU instance %d on GPU %s: %v", gpuInstanceID, gpuUUID, ret)
	}
	return nil
}

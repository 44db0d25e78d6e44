package dra

import (
	resourceapi "k8s.io/api/resource/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/metrics"
)

// DeviceKey names one of the driver's devices: its pool (the node) and its
// name in the pool.
type DeviceKey struct {
	Pool, Device string
}

// Allocated sums what the allocated claims consume of each of the driver's
// devices, as kube-scheduler counted it: the consumed capacity of every
// allocation result, which it rounds up to the device's request policy.
// This is how a program that is not kube-scheduler sees DRA allocations,
// which no ResourceSlice records.
func Allocated(claims []*resourceapi.ResourceClaim) map[DeviceKey]metrics.Usage {
	out := map[DeviceKey]metrics.Usage{}
	for _, c := range claims {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Driver != gpuv1alpha1.DRADriverName {
				continue
			}
			key := DeviceKey{Pool: r.Pool, Device: r.Device}
			u := out[key]
			memory, cores := r.ConsumedCapacity[gpuv1alpha1.DRACapacityMemory], r.ConsumedCapacity[gpuv1alpha1.DRACapacityCores]
			u.MemoryBytes += memory.Value()
			u.Cores += cores.Value()
			if shares, ok := r.ConsumedCapacity[gpuv1alpha1.DRACapacityShares]; ok {
				u.Shares += shares.Value()
			} else {
				u.Shares++
			}
			out[key] = u
		}
	}
	return out
}

// InstanceUse returns, for a GPU whose MIG instances are made on demand,
// what each instance it may be cut into takes of it when a claim is
// allocated it, by device name: its profile's memory and compute, and a
// share. It is nil for any other GPU.
func InstanceUse(g gpuv1alpha1.GPUDevice) map[string]metrics.Usage {
	if g.MIGGeometry == nil {
		return nil
	}
	out := map[string]metrics.Usage{}
	for _, p := range migPartitions(g) {
		out[p.name] = metrics.Usage{MemoryBytes: p.profile.MemoryMiB * mebibyte, Cores: int64(p.profile.ComputePercent), Shares: 1}
	}
	return out
}

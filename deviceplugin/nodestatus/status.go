package nodestatus

import (
	"slices"
	"strings"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

// maxModels is the API's bound on the models display field.
const maxModels = 512

// Summary is the status's display fields.
type Summary struct {
	// GPUCount is the number of GPUs.
	GPUCount int32
	// Models are the distinct models, comma-separated.
	Models string
	// MemoryMiB is the memory of all GPUs.
	MemoryMiB int64
	// AllocatableMemoryMiB is the memory of healthy, uncordoned GPUs.
	AllocatableMemoryMiB int64
}

// Devices returns the published devices, ordered by index.
func (s Scaling) Devices(devices []gpu.Device) []gpuv1alpha1.GPUDevice {
	out := make([]gpuv1alpha1.GPUDevice, 0, len(devices))
	for _, d := range devices {
		out = append(out, s.Device(d))
	}
	// A MIG-mode GPU's instances share its index.
	slices.SortFunc(out, func(a, b gpuv1alpha1.GPUDevice) int {
		if a.Index != b.Index {
			return int(a.Index - b.Index)
		}
		return strings.Compare(a.UUID, b.UUID)
	})
	return out
}

// Summarize computes the display fields. Allocatable memory leaves out
// unhealthy GPUs and those the administrator cordoned.
func Summarize(devices []gpuv1alpha1.GPUDevice, cordoned []string) Summary {
	var (
		sum    Summary
		models []string
	)
	for _, d := range devices {
		sum.GPUCount++
		sum.MemoryMiB += d.MemoryMiB
		if d.Health == gpuv1alpha1.GPUHealthy && !slices.Contains(cordoned, d.UUID) {
			sum.AllocatableMemoryMiB += d.MemoryMiB
		}
		if !slices.Contains(models, d.Model) {
			models = append(models, d.Model)
		}
	}
	sum.Models = truncate(strings.Join(models, ","), maxModels)
	return sum
}

// FreeMemoryMiB is the memory of the healthy, uncordoned devices that is
// not allocated, given the memory allocated on each device by UUID; a
// device allocated past its memory counts as full.
func FreeMemoryMiB(devices []gpuv1alpha1.GPUDevice, cordoned []string, allocated map[string]int64) int64 {
	var free int64
	for _, d := range devices {
		if d.Health == gpuv1alpha1.GPUHealthy && !slices.Contains(cordoned, d.UUID) {
			free += max(d.MemoryMiB-allocated[d.UUID], 0)
		}
	}
	return free
}

package nodestatus

import (
	"math"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

// Scaling turns physical GPUs into what the scheduler may hand out.
type Scaling struct {
	// SplitCount is each GPU's share limit.
	SplitCount int32
	// MemoryScaling multiplies each GPU's memory.
	MemoryScaling float64
	// CoreScaling multiplies each GPU's 100 cores.
	CoreScaling float64
}

// Device returns the published form of a GPU.
func (s Scaling) Device(d gpu.Device) gpuv1alpha1.GPUDevice {
	health := gpuv1alpha1.GPUHealthy
	if !d.Health.Healthy {
		health = gpuv1alpha1.GPUUnhealthy
	}
	out := gpuv1alpha1.GPUDevice{
		UUID:          d.UUID,
		Index:         int32(d.Index),
		Model:         d.Model,
		MemoryMiB:     int64(math.Floor(float64(d.MemoryMiB) * s.MemoryScaling)),
		Cores:         int32(math.Round(100 * s.CoreScaling)),
		ShareLimit:    s.SplitCount,
		NUMANode:      int32(d.NUMANode),
		Health:        health,
		HealthMessage: truncate(d.Health.Message, maxHealthMessage),
		MIGGeometry:   d.MIGGeometry,
	}
	if d.MIGGeometry != nil {
		// Its instances are handed out whole, at their own memory and
		// compute: scaling neither splits nor over-commits them.
		out.MemoryMiB, out.Cores = d.MemoryMiB, 100
	}
	if d.MIG != nil {
		// A MIG instance is handed out whole, to one container, as it
		// is: HAMi-core neither splits nor over-commits it.
		out.MemoryMiB, out.Cores, out.ShareLimit = d.MemoryMiB, 100, 1
		out.MIG = &gpuv1alpha1.MIGInstance{
			ParentUUID:        d.MIG.ParentUUID,
			Profile:           d.MIG.Profile,
			GPUInstanceID:     int32(d.MIG.GPUInstanceID),
			ComputeInstanceID: int32(d.MIG.ComputeInstanceID),
			ComputePercent:    int32(d.MIG.ComputePercent),
		}
		if p := d.MIG.CapsProblem; p != nil {
			out.MIG.CapabilityProblem = truncate(p.Message(), maxHealthMessage)
		}
	}
	return out
}

// maxHealthMessage is the API's bound on a device's health message and a
// MIG instance's capability problem.
const maxHealthMessage = 1024

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

package plugin

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/deviceplugin/config"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu/nvmlgpu"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu/simulated"
)

// NewBackend returns the GPU source the configuration asks for: the
// simulated-GPU file when one is set, NVML otherwise.
func NewBackend(cfg *config.Configuration, clk clock.WithTicker) gpu.Backend {
	if cfg.SimulatedGPUFile != "" {
		return simulated.New(cfg.SimulatedGPUFile, cfg.SimulatedReloadPeriod.Duration, clk)
	}
	return nvmlgpu.New(nvml.New(), nvmlgpu.Options{
		IgnoredXIDs:    cfg.IgnoredXIDs,
		RecoveryPeriod: cfg.HealthRecoveryPeriod.Duration,
		Clock:          clk,
	})
}

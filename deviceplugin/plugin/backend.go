package plugin

import (
	"path/filepath"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/deviceplugin/config"
	"github.com/tessera-gpu/tessera/deviceplugin/driver"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu/nvmlgpu"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu/simulated"
)

// NewBackend returns the GPU source the configuration asks for: the
// simulated-GPU file when one is set, NVML otherwise: loaded from the
// driver root when one is configured, else wherever the dynamic loader
// finds it (where the container toolkit put it).
func NewBackend(cfg *config.Configuration, clk clock.WithTicker) gpu.Backend {
	if cfg.SimulatedGPUFile != "" {
		return simulated.New(cfg.SimulatedGPUFile, cfg.SimulatedReloadPeriod.Duration, clk, cfg.DynamicMIG)
	}
	var opts []nvml.LibraryOption
	if cfg.DriverRoot != "" {
		root := driver.Root{Path: cfg.DriverRoot, HostPath: cfg.HostDriverRoot}
		path, err := root.NVMLLibrary()
		if err != nil {
			// NVML then fails to load, and the GPUNode says that the
			// driver's library was not found.
			path = filepath.Join(cfg.DriverRoot, "libnvidia-ml.so.1")
		}
		opts = append(opts, nvml.WithLibraryPath(path))
	}
	return nvmlgpu.New(nvml.New(opts...), nvmlgpu.Options{
		IgnoredXIDs:    cfg.IgnoredXIDs,
		RecoveryPeriod: cfg.HealthRecoveryPeriod.Duration,
		ProcRoot:       cfg.ProcRoot,
		Clock:          clk,
		DynamicMIG:     cfg.DynamicMIG,
	})
}

// Command gpucheck runs the device plugin's NVML backend against this
// machine's real NVIDIA driver and prints what it found: the driver, every
// GPU (and MIG instance) as the plugin would publish it, what NVML measures
// of each, and the health events seen while it watches; then, on a GPU in
// MIG mode with no instances, it makes and destroys one MIG instance as a
// plugin with dynamicMIG does (never changing MIG mode). It exits non-zero
// when the driver cannot be used or a step fails. hack/gpu-check.sh runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/tessera-gpu/tessera/deviceplugin/config"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu/nvmlgpu"
)

func main() {
	watch := flag.Duration("watch", 5*time.Second, "how long to watch the GPUs' health events")
	flag.Parse()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, os.Stdout, nvml.New(), *watch); err != nil {
		fmt.Fprintln(os.Stderr, "gpucheck:", err)
		os.Exit(1)
	}
}

// run checks discovery, usage and the health watch of the backend over lib.
func run(ctx context.Context, out io.Writer, lib nvml.Interface, watch time.Duration) (err error) {
	b := nvmlgpu.New(lib, nvmlgpu.Options{IgnoredXIDs: config.DefaultIgnoredXIDs(), RecoveryPeriod: config.DefaultHealthRecovery})
	defer func() {
		if cerr := b.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("closing NVML: %w", cerr))
		}
	}()
	inv, err := b.Discover(ctx)
	if err != nil {
		return fmt.Errorf("discovery: %w", err)
	}
	fmt.Fprintf(out, "driver %s, %d devices\n", inv.DriverVersion, len(inv.Devices))
	instances := map[string]int{}
	for _, d := range inv.Devices {
		if d.MIG != nil {
			instances[d.MIG.ParentUUID]++
		}
	}
	if len(inv.Devices) == 0 {
		// A GPU in MIG mode with no instances serves nothing, unless
		// its instances are made on demand.
		if err := checkDynamicMIG(ctx, out, lib, instances); err != nil {
			return err
		}
		return errors.New("discovery found no GPU that serves without dynamic MIG")
	}
	for _, d := range inv.Devices {
		fmt.Fprintf(out, "device %s: index %d, %q, %d MiB, NUMA node %d, healthy %v, device files %v\n",
			d.UUID, d.Index, d.Model, d.MemoryMiB, d.NUMANode, d.Health.Healthy, d.DeviceNodes)
		if m := d.MIG; m != nil {
			fmt.Fprintf(out, "  MIG instance of %s: profile %s, GPU instance %d, compute instance %d, %d%% of its compute\n",
				m.ParentUUID, m.Profile, m.GPUInstanceID, m.ComputeInstanceID, m.ComputePercent)
		}
	}
	usage, err := b.Usage(ctx)
	if err != nil {
		return fmt.Errorf("usage: %w", err)
	}
	for _, u := range usage {
		fmt.Fprintf(out, "usage %s: %d of %d MiB used, utilisation %.0f%%, %d processes\n",
			u.UUID, u.MemoryUsedBytes>>20, u.MemoryTotalBytes>>20, 100*u.Utilization, len(u.Processes))
	}
	fmt.Fprintf(out, "watching health for %s\n", watch)
	watchCtx, stop := context.WithTimeout(ctx, watch)
	defer stop()
	events := 0
	err = b.WatchHealth(watchCtx, func(e gpu.HealthEvent) {
		events++
		fmt.Fprintf(out, "health event %s: healthy %v %s\n", e.UUID, e.Health.Healthy, e.Health.Message)
	})
	if err != nil {
		return fmt.Errorf("health watch: %w", err)
	}
	fmt.Fprintf(out, "%d health events; discovery, usage and the health watch work with this driver\n", events)
	return checkDynamicMIG(ctx, out, lib, instances)
}

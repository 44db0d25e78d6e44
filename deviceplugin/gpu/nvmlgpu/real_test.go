package nvmlgpu

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"k8s.io/klog/v2/ktesting"

	"github.com/tessera-gpu/tessera/deviceplugin/config"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

// realNVMLEnv, set to 1 on a GPU node, makes TestNVMLOnThisNode require
// the driver.
const realNVMLEnv = "TESSERA_NVML_TEST"

// TestNVMLOnThisNode runs the backend against the machine's real NVML
// library, loaded at run time. Without the driver it must say so clearly,
// naming the library, and the subtest that needs the driver skips, saying
// why, so that a run shows whether the real path ran. With the driver
// (required where TESSERA_NVML_TEST=1, as hack/gpu-check.sh sets it),
// every GPU is found with sane fields, measured, and stays healthy while
// its events are watched.
func TestNVMLOnThisNode(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	b := New(nvml.New(), Options{IgnoredXIDs: config.DefaultIgnoredXIDs(), RecoveryPeriod: time.Minute, ProbePeriod: 200 * time.Millisecond})
	defer func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	inv, err := b.Discover(ctx)
	switch {
	case err != nil && os.Getenv(realNVMLEnv) == "1":
		t.Fatalf("Discover with %s=1: %v", realNVMLEnv, err)
	case err != nil:
		if !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "NVIDIA") {
			t.Fatalf("Discover on a node without a usable driver: %v, want ErrNoDriver saying what is missing", err)
		}
		t.Logf("No GPU driver here, as reported: %v", err)
	}

	t.Run("with the real driver", func(t *testing.T) {
		if err != nil {
			t.Skipf("no NVIDIA driver on this machine, so the real-driver checks did not run (%v); run hack/gpu-check.sh on a GPU node", err)
		}
		checkRealNode(ctx, t, b, inv)
	})
}

// checkRealNode checks what the backend found on a machine with GPUs.
func checkRealNode(ctx context.Context, t *testing.T, b *Backend, inv gpu.Inventory) {
	t.Logf("driver %s, %d GPUs", inv.DriverVersion, len(inv.Devices))
	if inv.DriverVersion == "" || len(inv.Devices) == 0 {
		t.Fatalf("inventory %+v, want a driver version and at least one GPU", inv)
	}
	physical := map[string]int64{}
	for i, d := range inv.Devices {
		t.Logf("device %d: %+v", i, d)
		prefix := "GPU-"
		if d.MIG != nil {
			prefix = "MIG-"
			t.Logf("device %d is a MIG instance: %+v", i, *d.MIG)
		} else {
			physical[d.UUID] = d.MemoryMiB
		}
		if !strings.HasPrefix(d.UUID, prefix) || d.Model == "" || d.MemoryMiB <= 0 || d.NUMANode < -1 || !d.Health.Healthy || len(d.DeviceNodes) == 0 {
			t.Errorf("device %d = %+v", i, d)
		}
	}
	usage, err := b.Usage(ctx)
	if err != nil {
		t.Fatalf("Usage: %v", err)
	}
	for _, u := range usage {
		t.Logf("GPU %s use: %+v", u.UUID, u)
		if memory, whole := physical[u.UUID]; (whole && u.MemoryTotalBytes>>20 != uint64(memory)) || u.MemoryUsedBytes > u.MemoryTotalBytes || u.Utilization > 1 {
			t.Errorf("GPU %s use %+v does not match its %d MiB", u.UUID, u, memory)
		}
	}
	watchCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var events []gpu.HealthEvent
	if err := b.WatchHealth(watchCtx, func(e gpu.HealthEvent) { events = append(events, e) }); err != nil {
		t.Fatalf("WatchHealth: %v", err)
	}
	if len(events) != 0 {
		t.Errorf("health events on an idle healthy node: %+v", events)
	}
}

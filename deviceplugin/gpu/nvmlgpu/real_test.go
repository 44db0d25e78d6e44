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
// naming the library; with it (required where TESSERA_NVML_TEST=1), every
// GPU is found with sane fields, measured, and stays healthy while its
// events are watched.
func TestNVMLOnThisNode(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	b := New(nvml.New(), Options{IgnoredXIDs: config.DefaultIgnoredXIDs(), RecoveryPeriod: time.Minute, ProbePeriod: 200 * time.Millisecond})
	defer func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	inv, err := b.Discover(ctx)
	if err != nil && os.Getenv(realNVMLEnv) != "1" {
		if !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "NVIDIA") {
			t.Fatalf("Discover on a node without a usable driver: %v, want ErrNoDriver saying what is missing", err)
		}
		t.Logf("No GPU driver here, as reported: %v", err)
		return
	}
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	t.Logf("driver %s, %d GPUs", inv.DriverVersion, len(inv.Devices))
	if inv.DriverVersion == "" || len(inv.Devices) == 0 {
		t.Fatalf("inventory %+v, want a driver version and at least one GPU", inv)
	}
	for i, d := range inv.Devices {
		t.Logf("GPU %d: %+v", i, d)
		if !strings.HasPrefix(d.UUID, "GPU-") || d.Index != i || d.Model == "" || d.MemoryMiB <= 0 || d.NUMANode < -1 || !d.Health.Healthy {
			t.Errorf("GPU %d = %+v", i, d)
		}
	}
	usage, err := b.Usage(ctx)
	if err != nil || len(usage) != len(inv.Devices) {
		t.Fatalf("Usage = %d entries, %v; want one per GPU", len(usage), err)
	}
	for i, u := range usage {
		t.Logf("GPU %d use: %+v", i, u)
		if u.MemoryTotalBytes>>20 != uint64(inv.Devices[i].MemoryMiB) || u.MemoryUsedBytes > u.MemoryTotalBytes || u.Utilization > 1 {
			t.Errorf("GPU %d use %+v does not match its %d MiB", i, u, inv.Devices[i].MemoryMiB)
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

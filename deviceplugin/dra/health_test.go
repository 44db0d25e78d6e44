package dra

import (
	"context"
	"testing"
	"time"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/inventory"
)

func TestWatchHealthStatusReportsEveryGPUAtChangesAndBeforeTheTimeout(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	inv := inventory.New(gpu.Inventory{Devices: testGPUs()})
	clk := clocktesting.NewFakeClock(time.Now())
	d := newTestDriver(t, func(c *DriverConfig) { c.Devices = inv; c.Clock = clk })
	reports := make(chan kubeletplugin.DeviceHealthReport)
	done := make(chan error, 1)
	go func() { done <- d.WatchHealthStatus(ctx, reports) }()

	health := func(r kubeletplugin.DeviceHealthReport) map[string]kubeletplugin.DeviceHealth {
		out := map[string]kubeletplugin.DeviceHealth{}
		for _, h := range r.Devices {
			if h.PoolName != testNode || h.HealthCheckTimeout != healthTimeout {
				t.Errorf("report of %s: pool %s, timeout %v", h.DeviceName, h.PoolName, h.HealthCheckTimeout)
			}
			out[h.DeviceName] = h
		}
		return out
	}
	first := health(<-reports)
	if len(first) != 3 || first["gpu-0"].Health != kubeletplugin.HealthStatusHealthy ||
		first["gpu-2"].Health != kubeletplugin.HealthStatusUnhealthy || first["gpu-2"].Message != "XID 79" {
		t.Errorf("first report %+v, want every GPU, gpu-2 unhealthy with its reason", first)
	}

	// A GPU turns unhealthy: reported at once.
	inv.SetHealth(gpu.HealthEvent{UUID: "GPU-a", Health: gpu.Unhealthy("XID 48")})
	if got := health(<-reports)["gpu-0"]; got.Health != kubeletplugin.HealthStatusUnhealthy || got.Message != "XID 48" {
		t.Errorf("after the change gpu-0 is reported %+v", got)
	}
	// Nothing changes: the report is repeated before the kubelet's timeout.
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(healthRefresh)
	if got := health(<-reports)["gpu-0"]; got.Health != kubeletplugin.HealthStatusUnhealthy {
		t.Errorf("the repeated report has gpu-0 %+v", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("WatchHealthStatus returned %v when its context ended", err)
	}
}

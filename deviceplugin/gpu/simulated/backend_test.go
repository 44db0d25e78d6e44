package simulated

import (
	"context"
	"os"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

const twoGPUs = `
gpus:
- {uuid: GPU-a, model: A100, memoryMiB: 40960, utilizationPercent: 50, memoryUsedMiB: 1024}
- {uuid: GPU-b, model: A100, memoryMiB: 40960}
`

func TestDiscoverOrdersByIndexAndSaysSimulated(t *testing.T) {
	path := writeFile(t, "gpus:\n- {uuid: b, model: m, memoryMiB: 1, index: 1}\n- {uuid: a, model: m, memoryMiB: 1, index: 0}\n")
	inv, err := New(path, time.Second, testingclock.NewFakeClock(time.Now())).Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if inv.DriverVersion != "simulated" {
		t.Errorf("driver version %q, want simulated", inv.DriverVersion)
	}
	if inv.Devices[0].UUID != "a" || inv.Devices[1].UUID != "b" {
		t.Errorf("devices not ordered by index: %+v", inv.Devices)
	}
}

func TestWatchHealthFollowsTheFile(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	path := writeFile(t, twoGPUs)
	clk := testingclock.NewFakeClock(time.Now())
	b := New(path, time.Second, clk)
	if _, err := b.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	events := make(chan gpu.HealthEvent, 10)
	done := make(chan error)
	go func() { done <- b.WatchHealth(ctx, func(e gpu.HealthEvent) { events <- e }) }()

	step := func(content string) {
		t.Helper()
		if content != "" {
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		clk.Step(time.Second)
	}
	expect := func(want gpu.HealthEvent) {
		t.Helper()
		select {
		case got := <-events:
			if got != want {
				t.Fatalf("event %+v, want %+v", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no event, want %+v", want)
		}
	}

	step(`
gpus:
- {uuid: GPU-a, model: A100, memoryMiB: 40960, health: Unhealthy, healthMessage: XID 79}
- {uuid: GPU-b, model: A100, memoryMiB: 40960}
`)
	expect(gpu.HealthEvent{UUID: "GPU-a", Health: gpu.Unhealthy("XID 79")})

	// A corrupt file keeps the last good health: no event.
	step("gpus: [")
	// Recovery.
	step(twoGPUs)
	expect(gpu.HealthEvent{UUID: "GPU-a", Health: gpu.Healthy()})

	usage, err := b.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if usage[0].MemoryUsedBytes != 1024<<20 || usage[0].Utilization != 0.5 || usage[0].MemoryTotalBytes != 40960<<20 {
		t.Errorf("usage %+v does not follow the file", usage[0])
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("WatchHealth: %v", err)
	}
	select {
	case e := <-events:
		t.Errorf("unexpected event %+v", e)
	default:
	}
}

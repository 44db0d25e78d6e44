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
	inv, err := New(path, time.Second, testingclock.NewFakeClock(time.Now()), false).Discover(context.Background())
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

// watch is a health watch over a simulated-GPU file, started after a
// first Discover.
type watch struct {
	ctx    context.Context
	cancel context.CancelFunc
	path   string
	b      *Backend
	clk    *testingclock.FakeClock
	events chan gpu.HealthEvent
	done   chan error
}

func startWatch(t *testing.T, content string) *watch {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	w := &watch{path: writeFile(t, content), clk: testingclock.NewFakeClock(time.Now()), events: make(chan gpu.HealthEvent, 10), done: make(chan error)}
	w.ctx, w.cancel = context.WithCancel(ctx)
	t.Cleanup(w.cancel)
	w.b = New(w.path, time.Second, w.clk, false)
	if _, err := w.b.Discover(w.ctx); err != nil {
		t.Fatal(err)
	}
	go func() { w.done <- w.b.WatchHealth(w.ctx, func(e gpu.HealthEvent) { w.events <- e }) }()
	return w
}

func TestWatchHealthFollowsTheFile(t *testing.T) {
	w := startWatch(t, twoGPUs)
	ctx, cancel, path, b, clk, events, done := w.ctx, w.cancel, w.path, w.b, w.clk, w.events, w.done

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

// TestWatchHealthAfterARediscovery pins that an edit changing a GPU's
// health and the MIG layout at once is reported by the health watch even
// when the plugin's rescan read the file first.
func TestWatchHealthAfterARediscovery(t *testing.T) {
	w := startWatch(t, twoGPUs)
	for !w.clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	if err := os.WriteFile(w.path, []byte(`
gpus:
- {uuid: GPU-a, model: A100, memoryMiB: 40960, health: Unhealthy, healthMessage: XID 79}
- {uuid: GPU-b, model: A100, memoryMiB: 40960, migInstances: [{uuid: MIG-b1, profile: 1g.5gb, memoryMiB: 4864}]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := w.b.Discover(w.ctx); err != nil {
		t.Fatal(err)
	}
	w.clk.Step(time.Second)
	select {
	case got := <-w.events:
		if want := (gpu.HealthEvent{UUID: "GPU-a", Health: gpu.Unhealthy("XID 79")}); got != want {
			t.Errorf("event %+v, want %+v", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Error("GPU-a's failure was not reported")
	}
}

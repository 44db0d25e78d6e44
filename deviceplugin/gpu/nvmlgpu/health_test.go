package nvmlgpu

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/tessera-gpu/tessera/deviceplugin/config"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu/nvmlgpu/nvmlfake"
)

const (
	probePeriod    = time.Second
	recoveryPeriod = time.Minute
)

// healthHarness runs WatchHealth over a four-GPU fake node.
type healthHarness struct {
	t       *testing.T
	ctx     context.Context
	backend *Backend
	node    *nvmlfake.Node
	clock   *testingclock.FakeClock
	reports chan gpu.HealthEvent
}

func startHealth(t *testing.T) *healthHarness {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	h := &healthHarness{
		t:       t,
		node:    newFakeNode(t, gpus.Multiple(4, gpus.A100_SXM4_40GB)...),
		clock:   testingclock.NewFakeClock(time.Now()),
		reports: make(chan gpu.HealthEvent, 64),
	}
	b := New(h.node, Options{
		IgnoredXIDs:    config.DefaultIgnoredXIDs(),
		RecoveryPeriod: recoveryPeriod,
		ProbePeriod:    probePeriod,
		Clock:          h.clock,
	})
	h.ctx, h.backend = ctx, b
	if _, err := b.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- b.WatchHealth(ctx, func(e gpu.HealthEvent) { h.reports <- e }) }()
	select {
	case <-h.node.Waiting():
	case <-time.After(10 * time.Second):
		t.Fatal("the health watch did not start")
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("WatchHealth: %v", err)
		}
	})
	return h
}

func (h *healthHarness) send(gpuIndex int, eventType uint64, data uint64) {
	e := nvml.EventData{EventType: eventType, EventData: data}
	if gpuIndex >= 0 {
		e.Device = h.node.Devices[gpuIndex]
	}
	h.node.Send(e)
}

func (h *healthHarness) expect(want ...gpu.HealthEvent) {
	h.t.Helper()
	for _, w := range want {
		select {
		case got := <-h.reports:
			if got != w {
				h.t.Fatalf("health report %+v, want %+v", got, w)
			}
		case <-time.After(10 * time.Second):
			h.t.Fatalf("no health report, want %+v", w)
		}
	}
}

// expectNothingBefore sends a sentinel XID on GPU 3 and expects it to be
// the next report: whatever was sent before it reported nothing.
func (h *healthHarness) expectNothingBefore() {
	h.t.Helper()
	h.send(3, nvml.EventTypeXidCriticalError, 48)
	h.expect(gpu.HealthEvent{UUID: h.node.UUID(3), Health: gpu.Unhealthy("XID 48 critical error")})
}

// probe moves the clock past a probe period and waits for the watch to run
// a probe (it reads every GPU's memory).
func (h *healthHarness) probe(d time.Duration) {
	h.t.Helper()
	before := len(h.node.Device(0).GetMemoryInfoCalls())
	h.clock.Step(d)
	deadline := time.Now().Add(10 * time.Second)
	for len(h.node.Device(0).GetMemoryInfoCalls()) == before {
		if time.Now().After(deadline) {
			h.t.Fatal("the health watch did not probe")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestHealthRegistersXIDAndECCEvents(t *testing.T) {
	h := startHealth(t)
	h.expectNothingBefore()
	for i := range 4 {
		if got := h.node.Registered(i); got != watchedEvents {
			t.Errorf("GPU %d registered for events %#x, want %#x", i, got, watchedEvents)
		}
	}
}

func TestHealthEvents(t *testing.T) {
	tests := []struct {
		name      string
		gpu       int
		eventType uint64
		data      uint64
		want      []int // GPUs reported unhealthy
		message   string
	}{
		{name: "critical XID marks the GPU", gpu: 1, eventType: nvml.EventTypeXidCriticalError, data: 79, want: []int{1}, message: "XID 79 critical error"},
		{name: "double-bit ECC marks the GPU", gpu: 2, eventType: nvml.EventTypeDoubleBitEccError, want: []int{2}, message: "double-bit ECC error"},
		{name: "event without a device marks every GPU", gpu: -1, eventType: nvml.EventTypeXidCriticalError, data: 62, want: []int{0, 1, 2, 3}, message: "XID 62 critical error"},
		{name: "single-bit ECC is corrected and ignored", gpu: 1, eventType: nvml.EventTypeSingleBitEccError},
	}
	for _, xid := range config.DefaultIgnoredXIDs() {
		tests = append(tests, struct {
			name      string
			gpu       int
			eventType uint64
			data      uint64
			want      []int
			message   string
		}{name: "application XID " + strconv.FormatUint(xid, 10) + " is ignored", gpu: 0, eventType: nvml.EventTypeXidCriticalError, data: xid})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startHealth(t)
			h.send(tt.gpu, tt.eventType, tt.data)
			for _, i := range tt.want {
				h.expect(gpu.HealthEvent{UUID: h.node.UUID(i), Health: gpu.Unhealthy(tt.message)})
			}
			if len(tt.want) == 0 {
				h.expectNothingBefore()
			}
		})
	}
}

func TestHealthRecovery(t *testing.T) {
	h := startHealth(t)
	h.send(1, nvml.EventTypeXidCriticalError, 79)
	h.expect(gpu.HealthEvent{UUID: h.node.UUID(1), Health: gpu.Unhealthy("XID 79 critical error")})

	// Not yet quiet for the recovery period: still unhealthy.
	h.probe(recoveryPeriod - probePeriod)
	// Lost while waiting: stays unhealthy with the new reason, and a lost
	// GPU never recovers.
	h.node.SetMemoryReturn(1, nvml.ERROR_GPU_IS_LOST)
	h.probe(probePeriod)
	h.expect(gpu.HealthEvent{UUID: h.node.UUID(1), Health: gpu.Unhealthy("GPU is lost: it no longer answers on the PCI bus")})
	h.probe(2 * recoveryPeriod)
	h.expectNothingBefore()

	// Back on the bus and quiet for the recovery period: healthy. GPU 3,
	// marked by the sentinel at the same time, recovers in the same probe.
	h.node.SetMemoryReturn(1, nvml.SUCCESS)
	h.probe(probePeriod)
	h.probe(recoveryPeriod)
	h.expect(
		gpu.HealthEvent{UUID: h.node.UUID(1), Health: gpu.Healthy()},
		gpu.HealthEvent{UUID: h.node.UUID(3), Health: gpu.Healthy()},
	)
}

func TestHealthLostGPU(t *testing.T) {
	h := startHealth(t)
	h.node.SetMemoryReturn(2, nvml.ERROR_GPU_IS_LOST)
	h.probe(probePeriod)
	h.expect(gpu.HealthEvent{UUID: h.node.UUID(2), Health: gpu.Unhealthy("GPU is lost: it no longer answers on the PCI bus")})
	// Reported once, not at every probe.
	h.probe(probePeriod)
	h.expectNothingBefore()
}

func TestHealthRegistrationFailureMarksUnhealthy(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	node := newFakeNode(t, gpus.A100_SXM4_40GB, gpus.A100_SXM4_40GB)
	node.Device(0).RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.ERROR_UNKNOWN }
	node.Device(1).GetSupportedEventTypesFunc = func() (uint64, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	b := New(node, Options{Clock: testingclock.NewFakeClock(time.Now()), RecoveryPeriod: time.Hour})
	if _, err := b.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	reports := make(chan gpu.HealthEvent, 4)
	go func() { _ = b.WatchHealth(ctx, func(e gpu.HealthEvent) { reports <- e }) }()
	select {
	case got := <-reports:
		want := gpu.HealthEvent{UUID: node.UUID(0), Health: gpu.Unhealthy("registering for health events: ERROR_UNKNOWN")}
		if got != want {
			t.Fatalf("report %+v, want %+v", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a GPU that cannot be watched was not marked unhealthy")
	}
}

// TestDiscoverAgainKeepsTheWatchedHealth pins that listing the GPUs again,
// as the plugin does to find a changed MIG layout, neither forgets a
// failure the watch saw nor stops following the GPU.
func TestDiscoverAgainKeepsTheWatchedHealth(t *testing.T) {
	h := startHealth(t)
	failed := gpu.Unhealthy("XID 79 critical error")
	h.send(1, nvml.EventTypeXidCriticalError, 79)
	h.expect(gpu.HealthEvent{UUID: h.node.UUID(1), Health: failed})
	inv, err := h.backend.Discover(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := inv.Devices[1].Health; got != failed {
		t.Errorf("GPU 1 discovered again with health %+v, want %+v", got, failed)
	}
	if got := inv.Devices[0].Health; got != gpu.Healthy() {
		t.Errorf("GPU 0 discovered again with health %+v, want healthy", got)
	}
	h.probe(recoveryPeriod)
	h.expect(gpu.HealthEvent{UUID: h.node.UUID(1), Health: gpu.Healthy()})
}

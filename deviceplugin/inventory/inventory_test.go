package inventory

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

func TestSetHealth(t *testing.T) {
	inv := New(gpu.Inventory{DriverVersion: "v", Devices: []gpu.Device{
		{UUID: "b", Index: 1, Health: gpu.Healthy()},
		{UUID: "a", Index: 0, Health: gpu.Healthy()},
	}})
	if got := inv.Devices(); got[0].UUID != "a" || got[1].UUID != "b" {
		t.Fatalf("devices not ordered by index: %+v", got)
	}
	tests := []struct {
		name        string
		event       gpu.HealthEvent
		wantChanged bool
		wantHealth  gpu.Health
	}{
		{name: "failure changes health", event: gpu.HealthEvent{UUID: "a", Health: gpu.Unhealthy("XID 79")}, wantChanged: true, wantHealth: gpu.Unhealthy("XID 79")},
		{name: "same failure again is no change", event: gpu.HealthEvent{UUID: "a", Health: gpu.Unhealthy("XID 79")}, wantHealth: gpu.Unhealthy("XID 79")},
		{name: "new reason is a change", event: gpu.HealthEvent{UUID: "a", Health: gpu.Unhealthy("XID 48")}, wantChanged: true, wantHealth: gpu.Unhealthy("XID 48")},
		{name: "recovery is a change", event: gpu.HealthEvent{UUID: "a", Health: gpu.Healthy()}, wantChanged: true, wantHealth: gpu.Healthy()},
		{name: "unknown GPU is ignored", event: gpu.HealthEvent{UUID: "zz", Health: gpu.Unhealthy("x")}, wantHealth: gpu.Healthy()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed := inv.Changed()
			if got := inv.SetHealth(tt.event); got != tt.wantChanged {
				t.Errorf("SetHealth = %v, want %v", got, tt.wantChanged)
			}
			expectWoken(t, changed, tt.wantChanged)
			if d, _ := inv.Device("a"); d.Health != tt.wantHealth {
				t.Errorf("health %+v, want %+v", d.Health, tt.wantHealth)
			}
		})
	}
}

func TestSetHealthOfAMIGGPUReachesItsInstances(t *testing.T) {
	inv := New(gpu.Inventory{Devices: []gpu.Device{
		{UUID: "MIG-1", Index: 0, Health: gpu.Healthy(), MIG: &gpu.MIG{ParentUUID: "GPU-p"}},
		{UUID: "MIG-2", Index: 0, Health: gpu.Healthy(), MIG: &gpu.MIG{ParentUUID: "GPU-p"}},
		{UUID: "GPU-q", Index: 1, Health: gpu.Healthy()},
	}})
	if !inv.SetHealth(gpu.HealthEvent{UUID: "GPU-p", Health: gpu.Unhealthy("XID 79")}) {
		t.Fatal("an event of a MIG-mode GPU changed nothing")
	}
	for _, d := range inv.Devices() {
		if want := d.UUID != "GPU-q"; d.Health.Healthy == want {
			t.Errorf("%s healthy %v after its GPU failed", d.UUID, d.Health.Healthy)
		}
	}
}

func TestSetDevices(t *testing.T) {
	mig := func(uuid string, gi int) gpu.Device {
		return gpu.Device{UUID: uuid, Index: 0, MemoryMiB: 9856, Health: gpu.Healthy(), MIG: &gpu.MIG{ParentUUID: "GPU-p", Profile: "1g.10gb", GPUInstanceID: gi}}
	}
	tests := []struct {
		name        string
		devices     []gpu.Device
		wantChanged bool
		want        []gpu.Device
	}{
		{name: "the same layout is no change, whatever the health discovery says",
			devices: []gpu.Device{{UUID: "GPU-q", Index: 1, Health: gpu.Healthy()}, mig("MIG-1", 7)},
			want:    []gpu.Device{mig("MIG-1", 7), {UUID: "GPU-q", Index: 1, Health: gpu.Unhealthy("XID 79")}}},
		{name: "a new instance is a change; the GPU still there keeps its health",
			devices:     []gpu.Device{mig("MIG-2", 8), mig("MIG-1", 7), {UUID: "GPU-q", Index: 1, Health: gpu.Healthy()}},
			wantChanged: true,
			want:        []gpu.Device{mig("MIG-1", 7), mig("MIG-2", 8), {UUID: "GPU-q", Index: 1, Health: gpu.Unhealthy("XID 79")}}},
		{name: "an instance recut under its UUID is a change",
			devices:     []gpu.Device{mig("MIG-1", 9), mig("MIG-2", 8), {UUID: "GPU-q", Index: 1}},
			wantChanged: true,
			want:        []gpu.Device{mig("MIG-1", 9), mig("MIG-2", 8), {UUID: "GPU-q", Index: 1, Health: gpu.Unhealthy("XID 79")}}},
		{name: "every instance destroyed leaves the other GPU",
			devices:     []gpu.Device{{UUID: "GPU-q", Index: 1}},
			wantChanged: true,
			want:        []gpu.Device{{UUID: "GPU-q", Index: 1, Health: gpu.Unhealthy("XID 79")}}},
	}
	inv := New(gpu.Inventory{Devices: []gpu.Device{{UUID: "GPU-q", Index: 1, Health: gpu.Healthy()}, mig("MIG-1", 7)}})
	inv.SetHealth(gpu.HealthEvent{UUID: "GPU-q", Health: gpu.Unhealthy("XID 79")})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed := inv.Changed()
			if got := inv.SetDevices(tt.devices); got != tt.wantChanged {
				t.Errorf("SetDevices = %v, want %v", got, tt.wantChanged)
			}
			expectWoken(t, changed, tt.wantChanged)
			if got := inv.Devices(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("devices\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestWaitForDevices(t *testing.T) {
	inv := New(gpu.Inventory{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan bool)
	go func() { done <- inv.WaitForDevices(ctx) }()
	select {
	case <-done:
		t.Fatal("WaitForDevices returned with no device")
	case <-time.After(10 * time.Millisecond):
	}
	inv.SetDevices([]gpu.Device{{UUID: "MIG-1", MIG: &gpu.MIG{ParentUUID: "GPU-p"}}})
	if !<-done {
		t.Error("WaitForDevices = false once an instance appeared")
	}
	cancel()
	if New(gpu.Inventory{}).WaitForDevices(ctx) {
		t.Error("WaitForDevices = true after its context ended")
	}
}

// expectWoken checks that watchers of changed were woken, or not.
func expectWoken(t *testing.T, changed <-chan struct{}, want bool) {
	t.Helper()
	select {
	case <-changed:
		if !want {
			t.Error("watchers were woken for no change")
		}
	default:
		if want {
			t.Error("watchers were not woken")
		}
	}
}

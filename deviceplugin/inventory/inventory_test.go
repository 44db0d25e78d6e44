package inventory

import (
	"testing"

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
			select {
			case <-changed:
				if !tt.wantChanged {
					t.Error("watchers were woken for no change")
				}
			default:
				if tt.wantChanged {
					t.Error("watchers were not woken")
				}
			}
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

// Package inventory holds the node's GPUs as the plugin currently knows
// them, health included, and tells watchers when that changes.
package inventory

import (
	"slices"
	"sync"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

// Inventory is the node's GPUs and their current health. It is safe for
// concurrent use.
type Inventory struct {
	driverVersion string

	mu      sync.Mutex
	devices []gpu.Device
	changed chan struct{}
}

// New holds what discovery found, ordered by index.
func New(found gpu.Inventory) *Inventory {
	devices := slices.Clone(found.Devices)
	slices.SortFunc(devices, func(a, b gpu.Device) int { return a.Index - b.Index })
	return &Inventory{driverVersion: found.DriverVersion, devices: devices, changed: make(chan struct{})}
}

// DriverVersion is the GPU driver's version.
func (i *Inventory) DriverVersion() string { return i.driverVersion }

// Devices returns a copy of the GPUs, ordered by index.
func (i *Inventory) Devices() []gpu.Device {
	i.mu.Lock()
	defer i.mu.Unlock()
	return slices.Clone(i.devices)
}

// Device returns the GPU with the UUID.
func (i *Inventory) Device(uuid string) (gpu.Device, bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	for _, d := range i.devices {
		if d.UUID == uuid {
			return d, true
		}
	}
	return gpu.Device{}, false
}

// SetHealth records a health event: a GPU's, which its MIG instances
// share. It reports whether anything changed; an event for an unknown GPU
// changes nothing.
func (i *Inventory) SetHealth(ev gpu.HealthEvent) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	changed := false
	for n := range i.devices {
		if !i.devices[n].HealthOf(ev.UUID) || i.devices[n].Health == ev.Health {
			continue
		}
		i.devices[n].Health = ev.Health
		changed = true
	}
	if changed {
		close(i.changed)
		i.changed = make(chan struct{})
	}
	return changed
}

// Changed returns a channel that is closed at the next change.
func (i *Inventory) Changed() <-chan struct{} {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.changed
}

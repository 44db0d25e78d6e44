// Package inventory holds the node's GPUs as the plugin currently knows
// them, health included, and tells watchers when that changes.
package inventory

import (
	"context"
	"slices"
	"strings"
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
	return &Inventory{driverVersion: found.DriverVersion, devices: sorted(found.Devices), changed: make(chan struct{})}
}

// sorted returns a copy of the devices ordered by index, a MIG-mode GPU's
// instances, which share it, by UUID.
func sorted(devices []gpu.Device) []gpu.Device {
	out := slices.Clone(devices)
	slices.SortFunc(out, func(a, b gpu.Device) int {
		if a.Index != b.Index {
			return a.Index - b.Index
		}
		return strings.Compare(a.UUID, b.UUID)
	})
	return out
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
		i.notify()
	}
	return changed
}

// SetDevices takes the GPUs a new discovery found in place of those held,
// as when the administrator changed a MIG layout. A GPU still there keeps
// the health it has here, which the health watch, not discovery, keeps up
// to date. It reports whether anything but health changed; only then are
// watchers woken.
func (i *Inventory) SetDevices(devices []gpu.Device) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	if sameLayout(i.devices, devices) {
		return false
	}
	health := make(map[string]gpu.Health, len(i.devices))
	for _, d := range i.devices {
		health[d.UUID] = d.Health
	}
	next := sorted(devices)
	for n := range next {
		if h, ok := health[next[n].UUID]; ok {
			next[n].Health = h
		}
	}
	i.devices = next
	i.notify()
	return true
}

// WaitForDevices returns true once the inventory holds a device, false if
// ctx ends first.
func (i *Inventory) WaitForDevices(ctx context.Context) bool {
	for {
		changed := i.Changed()
		if len(i.Devices()) > 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-changed:
		}
	}
}

// notify wakes the watchers; i.mu is held.
func (i *Inventory) notify() {
	close(i.changed)
	i.changed = make(chan struct{})
}

// Changed returns a channel that is closed at the next change.
func (i *Inventory) Changed() <-chan struct{} {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.changed
}

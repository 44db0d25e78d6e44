package inventory

import (
	"reflect"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

// layoutChange is how two discoveries of a node differ, by device UUID.
type layoutChange struct {
	added, removed, changed []string
}

// diffLayout compares two discoveries, health aside: a MIG instance
// created, destroyed or recut, or anything else discovery reports of a
// device, such as its capability devices becoming readable.
func diffLayout(old, cur []gpu.Device) layoutChange {
	before := layoutByUUID(old)
	var c layoutChange
	for uuid, d := range layoutByUUID(cur) {
		prev, ok := before[uuid]
		switch {
		case !ok:
			c.added = append(c.added, uuid)
		case !reflect.DeepEqual(prev, d):
			c.changed = append(c.changed, uuid)
		}
		delete(before, uuid)
	}
	for uuid := range before {
		c.removed = append(c.removed, uuid)
	}
	return c
}

func (c layoutChange) empty() bool {
	return len(c.added) == 0 && len(c.removed) == 0 && len(c.changed) == 0
}

func sameLayout(a, b []gpu.Device) bool { return diffLayout(a, b).empty() }

// layoutByUUID indexes the devices without their health. Order does not
// matter: a MIG-mode GPU's instances share its index.
func layoutByUUID(devices []gpu.Device) map[string]gpu.Device {
	out := make(map[string]gpu.Device, len(devices))
	for _, d := range devices {
		d.Health = gpu.Health{}
		out[d.UUID] = d
	}
	return out
}

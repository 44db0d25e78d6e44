package drabench

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// ledger is what the claims placed so far hold of one node: the capacity
// consumed of each shared device, the devices allocated whole, and the
// counters consumed of each counter set.
type ledger struct {
	consumed map[string]map[resourceapi.QualifiedName]resource.Quantity
	whole    sets.Set[string]
	counters map[string]map[string]resource.Quantity
	// available are the node's counter sets.
	available map[string]map[string]resource.Quantity
}

func newLedger(slices []*resourceapi.ResourceSlice) *ledger {
	l := &ledger{
		consumed:  map[string]map[resourceapi.QualifiedName]resource.Quantity{},
		whole:     sets.New[string](),
		counters:  map[string]map[string]resource.Quantity{},
		available: map[string]map[string]resource.Quantity{},
	}
	for _, s := range slices {
		for _, set := range s.Spec.SharedCounters {
			l.available[set.Name] = map[string]resource.Quantity{}
			for name, c := range set.Counters {
				l.available[set.Name][name] = c.Value
			}
		}
	}
	return l
}

// fits says whether a device has room for one more allocation that
// consumes want of it (for a shared device).
func (l *ledger) fits(d resourceapi.Device, want map[resourceapi.QualifiedName]resource.Quantity) bool {
	shared := d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations
	if !shared && l.whole.Has(d.Name) {
		return false
	}
	if shared {
		for name, q := range want {
			total := l.consumed[d.Name][name]
			total.Add(q)
			if total.Cmp(d.Capacity[name].Value) > 0 {
				return false
			}
		}
	}
	// A shared device's counters are charged once, by its first share.
	if shared && len(l.consumed[d.Name]) > 0 {
		return true
	}
	for _, c := range d.ConsumesCounters {
		for name, q := range c.Counters {
			total := l.counters[c.CounterSet][name]
			total.Add(q.Value)
			if total.Cmp(l.available[c.CounterSet][name]) > 0 {
				return false
			}
		}
	}
	return true
}

// take records an allocation that fits.
func (l *ledger) take(d resourceapi.Device, want map[resourceapi.QualifiedName]resource.Quantity) {
	shared := d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations
	if !shared || len(l.consumed[d.Name]) == 0 {
		for _, c := range d.ConsumesCounters {
			if l.counters[c.CounterSet] == nil {
				l.counters[c.CounterSet] = map[string]resource.Quantity{}
			}
			for name, q := range c.Counters {
				total := l.counters[c.CounterSet][name]
				total.Add(q.Value)
				l.counters[c.CounterSet][name] = total
			}
		}
	}
	if !shared {
		l.whole.Insert(d.Name)
		return
	}
	if l.consumed[d.Name] == nil {
		l.consumed[d.Name] = map[resourceapi.QualifiedName]resource.Quantity{}
	}
	for name, q := range want {
		total := l.consumed[d.Name][name]
		total.Add(q)
		l.consumed[d.Name][name] = total
	}
}

// firstFit allocates count claims of the model's spec by first fit: each
// to the first node, and on it the first eligible device in slice order,
// with room for it, as the allocator picks on a node and as nodes fill
// when every pod goes to the first node that fits. want is what the
// allocator consumes of a shared device per claim (nil where devices are
// not shared). The claims come back allocated, with what the allocator
// writes that kube-scheduler reads back: driver, pool, device, share ID
// and consumed capacity. It fails when the nodes cannot hold them all.
func firstFit(m model, nodeSlices [][]*resourceapi.ResourceSlice, want map[resourceapi.QualifiedName]resource.Quantity, request string, count int) ([]*resourceapi.ResourceClaim, error) {
	out := make([]*resourceapi.ResourceClaim, 0, count)
	for n := 0; n < len(nodeSlices) && len(out) < count; n++ {
		fill(m, nodeSlices[n], want, count-len(out), func(s resourceapi.ResourceSliceSpec, d resourceapi.Device) {
			out = append(out, allocatedClaim(len(out), m.claim, s, d, want, request))
		})
	}
	if len(out) < count {
		return nil, fmt.Errorf("%d nodes hold %d claims of the %s model, not %d", len(nodeSlices), len(out), m.name, count)
	}
	return out, nil
}

// fill places up to limit claims on one node's slices by first fit,
// calling place for each, and returns how many it placed.
func fill(m model, slices []*resourceapi.ResourceSlice, want map[resourceapi.QualifiedName]resource.Quantity, limit int, place func(resourceapi.ResourceSliceSpec, resourceapi.Device)) int {
	l := newLedger(slices)
	placed := 0
	for _, s := range slices {
		for _, d := range s.Spec.Devices {
			if !m.eligible(d) {
				continue
			}
			for placed < limit && l.fits(d, want) {
				l.take(d, want)
				place(s.Spec, d)
				placed++
			}
		}
	}
	return placed
}

// allocatedClaim is the i-th claim, allocated the device of the slice.
func allocatedClaim(i int, spec resourceapi.ResourceClaimSpec, slice resourceapi.ResourceSliceSpec, d resourceapi.Device, want map[resourceapi.QualifiedName]resource.Quantity, request string) *resourceapi.ResourceClaim {
	c := newClaim(fmt.Sprintf("claim-%06d", i), spec)
	result := resourceapi.DeviceRequestAllocationResult{Request: request, Driver: slice.Driver, Pool: slice.Pool.Name, Device: d.Name}
	if d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations {
		share := uuid.NewUUID()
		result.ShareID = &share
		result.ConsumedCapacity = want
	}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
		Results: []resourceapi.DeviceRequestAllocationResult{result},
	}}
	return c
}

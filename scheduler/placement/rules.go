package placement

import (
	"strings"

	"github.com/tessera-gpu/tessera/gpurequest"
)

// use is what a set of the pod's containers running at once takes on one GPU.
type use struct {
	memoryMiB int64
	cores     int32
	shares    int8 // at most MaxContainers
	// zeroCores is set when one of them asks for no cores, which a GPU
	// whose cores are fully taken does not accept.
	zeroCores bool
	// slices are the memory slices of the MIG instances made on demand
	// for them. The fields fill 16 bytes: the search copies and compares
	// a use per GPU at every step.
	slices uint16
}

// add adds container c, which takes the given memory and cores, to u.
func (u *use) add(memoryMiB int64, cores int32) {
	u.memoryMiB += memoryMiB
	u.cores += cores
	u.shares++
	u.zeroCores = u.zeroCores || cores == 0
}

// exclusive reports whether c asks for device d alone: 100 cores, or all of
// a device whose cores are scaled. A MIG instance is always had alone; a
// GPU that makes instances on demand never is, its instances' slices
// keeping them apart.
func exclusive(c *gpurequest.ContainerRequest, d *Device) bool {
	if d.MIG != nil {
		return false
	}
	return d.MIGProfile != "" || c.Cores == gpurequest.MaxPercent || (d.Cores > 0 && c.Cores == d.Cores)
}

// memoryOn is the memory c takes on d: what it asks for, or all of a MIG
// instance, which is never split, or of the instance made for it.
func memoryOn(c *gpurequest.ContainerRequest, d *Device) int64 {
	// The common case inline; the rest out of line, so that memoryOn
	// stays within the inliner's budget.
	if c.MemoryMiB > 0 && d.MIG == nil && d.MIGProfile == "" {
		return c.MemoryMiB
	}
	return memoryOnDevice(c, d)
}

// memoryOnDevice is memoryOn for any request and device.
func memoryOnDevice(c *gpurequest.ContainerRequest, d *Device) int64 {
	switch {
	case d.MIG != nil:
		return migMemoryOn(c, d)
	case d.MIGProfile != "":
		return d.MemoryMiB
	}
	return c.MemoryOn(d.MemoryMiB)
}

// coresOn is the compute c takes on d. A container that asks for the GPU
// alone takes all of it, so that its hold keeps everyone else out; one
// given a MIG instance made on demand takes the instance's.
func coresOn(c *gpurequest.ContainerRequest, d *Device) int32 {
	// As memoryOn: the common case inline, the rest out of line.
	if c.Cores < min(d.Cores, gpurequest.MaxPercent) && d.MIG == nil && d.MIGProfile == "" {
		return c.Cores
	}
	return coresOnDevice(c, d)
}

// coresOnDevice is coresOn for any request and device.
func coresOnDevice(c *gpurequest.ContainerRequest, d *Device) int32 {
	switch {
	case d.MIG != nil:
		return migCoresOn(c, d)
	case exclusive(c, d):
		return d.Cores
	}
	return c.Cores
}

// hasFilters reports whether the selection filters GPUs by type, UUID, MIG
// profile or mode.
func hasFilters(sel *gpurequest.Selection) bool {
	return len(sel.Types)+len(sel.ExcludeTypes)+len(sel.UUIDs)+len(sel.ExcludeUUIDs)+len(sel.MIGProfiles) > 0 || sel.Mode != ""
}

// staticReason checks what no placement changes: health, cordon and the
// pod's type and UUID filters.
func staticReason(d *Device, sel *gpurequest.Selection) (Reason, bool) {
	switch {
	case !d.Healthy:
		return ReasonUnhealthy, false
	case d.Cordoned:
		return ReasonCordoned, false
	case len(sel.Types) > 0 && !containsAnyFold(d.Model, sel.Types),
		containsAnyFold(d.Model, sel.ExcludeTypes):
		return ReasonTypeMismatch, false
	case len(sel.UUIDs) > 0 && !equalAnyFold(d.UUID, sel.UUIDs),
		equalAnyFold(d.UUID, sel.ExcludeUUIDs):
		return ReasonUUIDExcluded, false
	case d.MIG != nil:
		return dynamicMIGReason(sel)
	case len(sel.MIGProfiles) > 0 && !equalAnyFold(d.MIGProfile, sel.MIGProfiles),
		sel.Mode == gpurequest.ModeMIG && d.MIGProfile == "":
		return ReasonMIGProfile, false
	case sel.Mode == gpurequest.ModeShared && d.MIGProfile != "":
		return ReasonTypeMismatch, false
	}
	return 0, true
}

// Largest returns the GPU of the node with the most memory among those
// the request lets the pod use (healthy, not cordoned, of its types, UUIDs
// and mode), or nil when it may use none. Usage does not count: it names
// a limit that no eviction moves.
func Largest(n *Node, req *Request) *Device {
	var largest *Device
	for i := range n.Devices {
		d := &n.Devices[i]
		if _, ok := staticReason(d, &req.Selection); ok && (largest == nil || d.MemoryMiB > largest.MemoryMiB) {
			largest = d
		}
	}
	return largest
}

// check decides whether container c fits device d, which already carries
// the node's usage (ignored when free) and the pod's own use p of the same
// phase.
func check(d *Device, c *gpurequest.ContainerRequest, p use, free bool) (Reason, bool) {
	if d.MIG != nil {
		if _, _, r, ok := migFit(c, d, p, free); !ok {
			return r, false
		}
	}
	if d.MIGProfile != "" {
		switch {
		case c.Count > 1:
			return ReasonMIGCount, false
		case c.MemoryOn(d.MemoryMiB) > d.MemoryMiB:
			return ReasonMemory, false
		}
	}
	alone := exclusive(c, d)
	cores := c.Cores
	switch {
	case d.MIG != nil:
		cores = migCoresOn(c, d)
	case alone:
		cores = d.Cores
	}
	p.add(memoryOn(c, d), cores)
	return room(d, p, alone, free)
}

// room decides whether device d, with the node's usage (ignored when free),
// has room for a set of the pod's containers running at once that together
// use u, one of them asking for the GPU alone when alone is set. It applies
// the rules in Reason order and returns the first broken.
func room(d *Device, u use, alone, free bool) (Reason, bool) {
	var usedMemory int64
	var usedCores, usedShares int32
	if !free {
		usedMemory, usedCores, usedShares = d.UsedMemoryMiB, d.UsedCores, d.UsedShares
	}
	switch {
	case alone && (usedMemory != 0 || usedCores != 0 || usedShares != 0 || u.shares > 1):
		return ReasonExclusiveTaken, false
	case int64(usedShares)+int64(u.shares) > int64(d.ShareLimit):
		return ReasonShareLimit, false
	case usedMemory+u.memoryMiB > d.MemoryMiB:
		return ReasonMemory, false
	}
	total := int64(usedCores) + int64(u.cores)
	if total > int64(d.Cores) || (u.zeroCores && total >= int64(d.Cores)) {
		return ReasonCores, false
	}
	return 0, true
}

func containsAnyFold(s string, subs []string) bool {
	for _, sub := range subs {
		if containsFold(s, sub) {
			return true
		}
	}
	return false
}

func equalAnyFold(s string, items []string) bool {
	for _, item := range items {
		if strings.EqualFold(s, item) {
			return true
		}
	}
	return false
}

// containsFold is strings.Contains ignoring ASCII case, without the
// allocation of lower-casing the model on every call.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		j := 0
		for j < len(sub) && lowerASCII(s[i+j]) == lowerASCII(sub[j]) {
			j++
		}
		if j == len(sub) {
			return true
		}
	}
	return false
}

func lowerASCII(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

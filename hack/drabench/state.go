package drabench

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
)

// allocatedDevices is what kube-scheduler keeps, from its informer, of
// every allocated claim in the cluster (allocatedDevices in
// pkg/scheduler/framework/plugins/dynamicresources/allocateddevices.go):
// devices allocated whole, shares of shared devices, and the capacity
// consumed of each shared device.
type allocatedDevices struct {
	ids        sets.Set[structured.DeviceID]
	shareIDs   sets.Set[structured.SharedDeviceID]
	capacities structured.ConsumedCapacityCollection
}

// trackAllocated records the claims' allocations as the plugin's event
// handlers do with consumable capacity enabled: a result with a share ID
// is a share (with its consumed capacity), any other result a whole
// device, and admin access holds nothing.
func trackAllocated(claims []*resourceapi.ResourceClaim) *allocatedDevices {
	a := &allocatedDevices{
		ids:        sets.New[structured.DeviceID](),
		shareIDs:   sets.New[structured.SharedDeviceID](),
		capacities: structured.NewConsumedCapacityCollection(),
	}
	for _, c := range claims {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.AdminAccess != nil && *r.AdminAccess {
				continue
			}
			id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
			if r.ShareID == nil {
				a.ids.Insert(id)
				continue
			}
			a.shareIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
			if r.ConsumedCapacity != nil {
				a.capacities.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
			}
		}
	}
	return a
}

// gather returns the state one pod is allocated against. The plugin's
// GatherAllocatedState copies all three at each pod's PreFilter, so that
// allocations made meanwhile do not change the pod's view.
func (a *allocatedDevices) gather() structured.AllocatedState {
	return structured.AllocatedState{
		AllocatedDevices:         a.ids.Clone(),
		AllocatedSharedDeviceIDs: a.shareIDs.Clone(),
		AggregatedCapacity:       a.capacities.Clone(),
	}
}

// withoutShareSet returns the state without its set of shares. The
// allocator's deviceCapacityInUse walks that set, whole, for every
// shared device it checks that has no consumed capacity recorded yet;
// where every share records its consumed capacity, as every share of
// Tessera's claims does, the walk can find nothing, so without the set the
// allocator answers the same. It shows what indexing the shares by device
// would save.
func withoutShareSet(s structured.AllocatedState) structured.AllocatedState {
	s.AllocatedSharedDeviceIDs = sets.New[structured.SharedDeviceID]()
	return s
}

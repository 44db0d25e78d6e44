package drabench

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/tessera-gpu/tessera/deviceplugin/dra"
)

// schedulerFeatures are the allocator features kube-scheduler v1.37.2
// turns on with its default feature gates (AllocatorFeatures in
// pkg/scheduler/framework/plugins/dynamicresources): DRAAdminAccess,
// DRAPrioritizedList, DRAPartitionableDevices, DRADeviceTaints,
// DRADeviceBindingConditions with DRAResourceClaimDeviceStatus,
// DRAConsumableCapacity and DRAFractionalCapacityRange are on; the alpha
// gates behind the other features are off. structured.NewAllocator then
// picks the "incubating" allocator, the first whose features cover these
// ("stable" lacks consumable capacity).
func schedulerFeatures() structured.Features {
	return structured.Features{
		AdminAccess:             true,
		PrioritizedList:         true,
		PartitionableDevices:    true,
		DeviceTaints:            true,
		DeviceBindingAndStatus:  true,
		ConsumableCapacity:      true,
		FractionalCapacityRange: true,
	}
}

// newCELCache is the plugin's cache of compiled CEL expressions, of the
// same size and features.
func newCELCache() *cel.Cache {
	return cel.NewCache(10, cel.Features{EnableConsumableCapacity: true})
}

// classes serves Tessera's one DeviceClass, as the plugin's lister does.
type classes struct{ class *resourceapi.DeviceClass }

var _ structured.DeviceClassLister = classes{}

func newClasses() classes { return classes{class: dra.DeviceClass()} }

func (c classes) List() ([]*resourceapi.DeviceClass, error) {
	return []*resourceapi.DeviceClass{c.class}, nil
}

func (c classes) Get(name string) (*resourceapi.DeviceClass, error) {
	if name != c.class.Name {
		return nil, fmt.Errorf("device class %q not found", name)
	}
	return c.class, nil
}

// Package nvmlfake is a multi-GPU NVML server for tests, built from
// go-nvml's mocks: a mock server of any mix of GPU models whose health
// events, utilisation, processes and failures the test controls.
package nvmlfake

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// DriverVersion is the driver version the fake reports.
const DriverVersion = "550.54.15"

// Node is a fake NVML with one GPU per configuration given to New. GPU i
// is on NUMA node i/4.
type Node struct {
	*server.Server

	events      chan nvml.EventData
	waiting     chan struct{}
	waitingOnce sync.Once

	mu          sync.Mutex
	registered  map[string]uint64
	utilization map[string]uint32
	compute     map[string][]nvml.ProcessInfo
	graphics    map[string][]nvml.ProcessInfo
	memoryRet   map[string]nvml.Return
}

var _ nvml.Interface = (*Node)(nil)

// New returns a fake node with the GPUs.
func New(configs ...gpus.Config) (*Node, error) {
	s, err := server.New(server.WithGPUs(configs...), server.WithDriverVersion(DriverVersion))
	if err != nil {
		return nil, err
	}
	n := &Node{
		Server:      s,
		events:      make(chan nvml.EventData, 64),
		waiting:     make(chan struct{}),
		registered:  map[string]uint64{},
		utilization: map[string]uint32{},
		compute:     map[string][]nvml.ProcessInfo{},
		graphics:    map[string][]nvml.ProcessInfo{},
		memoryRet:   map[string]nvml.Return{},
	}
	s.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return &mock.EventSet{
			WaitFunc: func(uint32) (nvml.EventData, nvml.Return) {
				n.waitingOnce.Do(func() { close(n.waiting) })
				select {
				case e := <-n.events:
					return e, nvml.SUCCESS
				case <-time.After(2 * time.Millisecond):
					return nvml.EventData{}, nvml.ERROR_TIMEOUT
				}
			},
			FreeFunc: func() nvml.Return { return nvml.SUCCESS },
		}, nvml.SUCCESS
	}
	for i := range s.Devices {
		n.wire(i)
	}
	return n, nil
}

func (n *Node) wire(i int) {
	d := n.Device(i)
	d.GetNumaNodeIdFunc = func() (int, nvml.Return) { return i / 4, nvml.SUCCESS }
	d.GetSupportedEventTypesFunc = func() (uint64, nvml.Return) { return nvml.EventTypeAll, nvml.SUCCESS }
	d.RegisterEventsFunc = func(mask uint64, _ nvml.EventSet) nvml.Return {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.registered[d.UUID] = mask
		return nvml.SUCCESS
	}
	d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		n.mu.Lock()
		defer n.mu.Unlock()
		if ret, ok := n.memoryRet[d.UUID]; ok {
			return nvml.Memory{}, ret
		}
		return d.MemoryInfo, nvml.SUCCESS
	}
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		n.mu.Lock()
		defer n.mu.Unlock()
		return nvml.Utilization{Gpu: n.utilization[d.UUID]}, nvml.SUCCESS
	}
	d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.compute[d.UUID], nvml.SUCCESS
	}
	d.GetGraphicsRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.graphics[d.UUID], nvml.SUCCESS
	}
}

// Device returns GPU i.
func (n *Node) Device(i int) *server.Device { return n.Devices[i].(*server.Device) }

// UUID returns GPU i's UUID.
func (n *Node) UUID(i int) string { return n.Device(i).UUID }

// Send queues a health event for the event set's next Wait.
func (n *Node) Send(e nvml.EventData) { n.events <- e }

// Waiting is closed once a health watch first waits for events.
func (n *Node) Waiting() <-chan struct{} { return n.waiting }

// Registered returns the events GPU i was registered for.
func (n *Node) Registered(i int) uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.registered[n.UUID(i)]
}

// SetMemoryReturn makes GPU i's memory query fail with ret (SUCCESS
// restores it).
func (n *Node) SetMemoryReturn(i int, ret nvml.Return) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ret == nvml.SUCCESS {
		delete(n.memoryRet, n.UUID(i))
		return
	}
	n.memoryRet[n.UUID(i)] = ret
}

// SetMemoryUsed sets GPU i's used memory.
func (n *Node) SetMemoryUsed(i int, bytes uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.Device(i).MemoryInfo.Used = bytes
}

// SetUtilization sets GPU i's utilisation in percent.
func (n *Node) SetUtilization(i int, percent uint32) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.utilization[n.UUID(i)] = percent
}

// SetProcesses sets the compute and graphics processes on GPU i.
func (n *Node) SetProcesses(i int, compute, graphics []nvml.ProcessInfo) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.compute[n.UUID(i)] = compute
	n.graphics[n.UUID(i)] = graphics
}

// MIGInstance is one MIG instance of a fake GPU in MIG mode.
type MIGInstance struct {
	// UUID is the instance's MIG UUID.
	UUID string
	// GPUInstanceID and ComputeInstanceID identify it on its GPU.
	GPUInstanceID, ComputeInstanceID int
	// GPUSlices and ComputeSlices are its GPU and compute instance slices.
	GPUSlices, ComputeSlices uint32
	// MemoryMB is its memory, as NVML's attributes report it.
	MemoryMB uint64
}

// MIGSlots is the number of MIG instance slots of a fake GPU, as on an
// A100 or H100.
const MIGSlots = 7

// SetMIG puts GPU i in MIG mode with the instances, in slot order; a
// zero UUID leaves its slot empty.
func (n *Node) SetMIG(i int, instances ...MIGInstance) {
	d := n.Device(i)
	d.GetMigModeFunc = func() (int, int, nvml.Return) { return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS }
	d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return MIGSlots, nvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(slot int) (nvml.Device, nvml.Return) {
		if slot < 0 || slot >= MIGSlots {
			return nil, nvml.ERROR_INVALID_ARGUMENT
		}
		if slot >= len(instances) || instances[slot].UUID == "" {
			return nil, nvml.ERROR_NOT_FOUND
		}
		m := instances[slot]
		return &mock.Device{
			GetUUIDFunc:              func() (string, nvml.Return) { return m.UUID, nvml.SUCCESS },
			GetGpuInstanceIdFunc:     func() (int, nvml.Return) { return m.GPUInstanceID, nvml.SUCCESS },
			GetComputeInstanceIdFunc: func() (int, nvml.Return) { return m.ComputeInstanceID, nvml.SUCCESS },
			GetAttributesFunc: func() (nvml.DeviceAttributes, nvml.Return) {
				return nvml.DeviceAttributes{GpuInstanceSliceCount: m.GPUSlices, ComputeInstanceSliceCount: m.ComputeSlices, MemorySizeMB: m.MemoryMB}, nvml.SUCCESS
			},
		}, nvml.SUCCESS
	}
}

// SetDynamicMIG puts GPU i in MIG mode with no instances, for instances
// made on demand through go-nvml's mock of GPU and compute instances. Its
// MIG devices are the compute instances made, in GPU instance order, each
// with the UUID MIGUUID gives. When failCompute is set, making a compute
// instance fails.
func (n *Node) SetDynamicMIG(i int, failCompute bool) {
	d := n.Device(i)
	d.MigMode = nvml.DEVICE_MIG_ENABLE
	d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return MIGSlots, nvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(slot int) (nvml.Device, nvml.Return) {
		if slot < 0 || slot >= MIGSlots {
			return nil, nvml.ERROR_INVALID_ARGUMENT
		}
		made := n.madeInstances(d)
		if slot >= len(made) {
			return nil, nvml.ERROR_NOT_FOUND
		}
		gi, ci := made[slot][0], made[slot][1]
		return &mock.Device{
			GetUUIDFunc:              func() (string, nvml.Return) { return MIGUUID(d.UUID, gi, ci), nvml.SUCCESS },
			GetGpuInstanceIdFunc:     func() (int, nvml.Return) { return gi, nvml.SUCCESS },
			GetComputeInstanceIdFunc: func() (int, nvml.Return) { return ci, nvml.SUCCESS },
		}, nvml.SUCCESS
	}
	d.GetGpuInstanceByIdFunc = func(id int) (nvml.GpuInstance, nvml.Return) {
		d.RLock()
		defer d.RUnlock()
		for gi := range d.GpuInstances {
			if int(gi.Info.Id) == id {
				return gi, nvml.SUCCESS
			}
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
	create := d.CreateGpuInstanceWithPlacementFunc
	d.CreateGpuInstanceWithPlacementFunc = func(info *nvml.GpuInstanceProfileInfo, pl *nvml.GpuInstancePlacement) (nvml.GpuInstance, nvml.Return) {
		gi, ret := create(info, pl)
		if ret == nvml.SUCCESS && failCompute {
			gi.(*server.GpuInstance).CreateComputeInstanceFunc = func(*nvml.ComputeInstanceProfileInfo) (nvml.ComputeInstance, nvml.Return) {
				return nil, nvml.ERROR_INSUFFICIENT_RESOURCES
			}
		}
		return gi, ret
	}
}

// MIGUUID is the UUID of the MIG device of compute instance ci in GPU
// instance gi on the GPU with the UUID.
func MIGUUID(gpuUUID string, gi, ci int) string {
	return fmt.Sprintf("MIG-%s-%d-%d", gpuUUID, gi, ci)
}

// madeInstances lists the GPU and compute instance IDs of the compute
// instances on d, by GPU instance ID.
func (n *Node) madeInstances(d *server.Device) [][2]int {
	d.RLock()
	defer d.RUnlock()
	var made [][2]int
	for gi := range d.GpuInstances {
		gi.RLock()
		for ci := range gi.ComputeInstances {
			made = append(made, [2]int{int(gi.Info.Id), int(ci.Info.Id)})
		}
		gi.RUnlock()
	}
	slices.SortFunc(made, func(a, b [2]int) int { return a[0] - b[0] })
	return made
}

// MIGInstanceCount is the number of GPU instances on GPU i.
func (n *Node) MIGInstanceCount(i int) int {
	d := n.Device(i)
	d.RLock()
	defer d.RUnlock()
	return len(d.GpuInstances)
}

package nvmlgpu

import (
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// fakeNode is a multi-GPU NVML server built from go-nvml's mocks, with
// health events, utilisation and processes that a test controls.
type fakeNode struct {
	*server.Server
	events chan nvml.EventData
	// waiting is closed when the health watch first waits for an event.
	waiting     chan struct{}
	waitingOnce sync.Once

	mu          sync.Mutex
	registered  map[string]uint64
	utilization map[string]uint32
	compute     map[string][]nvml.ProcessInfo
	graphics    map[string][]nvml.ProcessInfo
	memoryRet   map[string]nvml.Return
}

func newFakeNode(t *testing.T, configs ...gpus.Config) *fakeNode {
	t.Helper()
	s, err := server.New(server.WithGPUs(configs...), server.WithDriverVersion("550.54.15"))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeNode{
		Server:      s,
		events:      make(chan nvml.EventData, 16),
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
				f.waitingOnce.Do(func() { close(f.waiting) })
				select {
				case e := <-f.events:
					return e, nvml.SUCCESS
				case <-time.After(2 * time.Millisecond):
					return nvml.EventData{}, nvml.ERROR_TIMEOUT
				}
			},
			FreeFunc: func() nvml.Return { return nvml.SUCCESS },
		}, nvml.SUCCESS
	}
	for i := range s.Devices {
		d := f.device(i)
		d.GetNumaNodeIdFunc = func() (int, nvml.Return) { return i / 4, nvml.SUCCESS }
		d.GetSupportedEventTypesFunc = func() (uint64, nvml.Return) { return nvml.EventTypeAll, nvml.SUCCESS }
		d.RegisterEventsFunc = func(mask uint64, _ nvml.EventSet) nvml.Return {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.registered[d.UUID] = mask
			return nvml.SUCCESS
		}
		d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if ret, ok := f.memoryRet[d.UUID]; ok {
				return nvml.Memory{}, ret
			}
			return d.MemoryInfo, nvml.SUCCESS
		}
		d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return nvml.Utilization{Gpu: f.utilization[d.UUID]}, nvml.SUCCESS
		}
		d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.compute[d.UUID], nvml.SUCCESS
		}
		d.GetGraphicsRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.graphics[d.UUID], nvml.SUCCESS
		}
	}
	return f
}

func (f *fakeNode) device(i int) *server.Device { return f.Devices[i].(*server.Device) }

func (f *fakeNode) uuid(i int) string { return f.device(i).UUID }

func (f *fakeNode) setMemoryReturn(i int, ret nvml.Return) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ret == nvml.SUCCESS {
		delete(f.memoryRet, f.uuid(i))
		return
	}
	f.memoryRet[f.uuid(i)] = ret
}

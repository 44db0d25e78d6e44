package dpserver

import (
	"context"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/vdevice"
)

// Devices is the node's GPUs and their health.
type Devices interface {
	// Devices returns the GPUs, ordered by index.
	Devices() []gpu.Device
	// Changed returns a channel closed at the next change.
	Changed() <-chan struct{}
}

// Allocator answers the kubelet's allocation calls.
type Allocator interface {
	Allocate(ctx context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error)
	Preferred(ctx context.Context, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error)
}

// AllocateObserver is told how each Allocate call went, for metrics.
type AllocateObserver interface {
	ObserveAllocate(duration time.Duration, err error)
}

// service implements the DevicePlugin gRPC service.
type service struct {
	pluginapi.UnimplementedDevicePluginServer

	devices    Devices
	allocator  Allocator
	splitCount int
	observer   AllocateObserver
	now        func() time.Time
	// stop is closed when the server serving this service stops, ending
	// ListAndWatch streams.
	stop <-chan struct{}
}

var _ pluginapi.DevicePluginServer = (*service)(nil)

// GetDevicePluginOptions tells the kubelet to ask for preferred allocations.
func (s *service) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{GetPreferredAllocationAvailable: true}, nil
}

// ListAndWatch sends the virtual devices, then again at every health change.
func (s *service) ListAndWatch(_ *pluginapi.Empty, stream pluginapi.DevicePlugin_ListAndWatchServer) error {
	for {
		changed := s.devices.Changed()
		if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: VirtualDevices(s.devices.Devices(), s.splitCount)}); err != nil {
			return err
		}
		select {
		case <-stream.Context().Done():
			return nil
		case <-s.stop:
			return nil
		case <-changed:
		}
	}
}

// GetPreferredAllocation steers the kubelet to the GPUs the scheduler chose.
func (s *service) GetPreferredAllocation(ctx context.Context, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	return s.allocator.Preferred(ctx, req)
}

// Allocate hands the kubelet the container's devices and limits.
func (s *service) Allocate(ctx context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	start := s.now()
	resp, err := s.allocator.Allocate(ctx, req)
	if s.observer != nil {
		s.observer.ObserveAllocate(s.now().Sub(start), err)
	}
	return resp, err
}

// PreStartContainer is not used: GetDevicePluginOptions does not ask for it.
func (s *service) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

// VirtualDevices lists splitCount virtual devices per GPU, each with the
// GPU's health and NUMA node.
func VirtualDevices(devices []gpu.Device, splitCount int) []*pluginapi.Device {
	out := make([]*pluginapi.Device, 0, len(devices)*splitCount)
	for _, d := range devices {
		health := pluginapi.Healthy
		if !d.Health.Healthy {
			health = pluginapi.Unhealthy
		}
		var topology *pluginapi.TopologyInfo
		if d.NUMANode >= 0 {
			topology = &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: int64(d.NUMANode)}}}
		}
		for n := range splitCount {
			out = append(out, &pluginapi.Device{ID: vdevice.ID(d.UUID, n), Health: health, Topology: topology})
		}
	}
	return out
}

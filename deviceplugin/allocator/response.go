package allocator

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/hamicore"
)

// ResponseConfig says what a container gets besides its devices.
type ResponseConfig struct {
	// DeviceListStrategy is how the GPUs reach the container runtime, one
	// of config.DeviceListStrategies; empty means config.StrategyEnvVar.
	DeviceListStrategy string
	// Library is the HAMi-core library mounted into containers.
	Library hamicore.Library
	// MemoryOversubscribed says that the node publishes its GPUs with more
	// memory than they have (memoryScaling above 1): the memory the
	// scheduler hands out may exceed what is physically free, and only
	// HAMi-core's over-subscription keeps such a container from failing
	// its allocations.
	MemoryOversubscribed bool
}

// Container returns the kubelet's answer for one container: its physical
// GPUs in the form the strategy says, the limits HAMi-core enforces (as
// variables, whatever the strategy), and the library mounts.
func (r ResponseConfig) Container(podUID types.UID, c gpuv1alpha1.ContainerAllocation) *pluginapi.ContainerAllocateResponse {
	shares := make([]hamicore.Share, 0, len(c.Devices))
	uuids := make([]string, 0, len(c.Devices))
	for _, d := range c.Devices {
		shares = append(shares, hamicore.Share{UUID: d.UUID, MemoryMiB: d.MemoryMiB, Cores: d.Cores})
		uuids = append(uuids, d.UUID)
	}
	resp := &pluginapi.ContainerAllocateResponse{
		Envs: hamicore.Env(shares, fmt.Sprintf("/tmp/tessera-vgpu-%s-%s.cache", podUID, c.Name), r.MemoryOversubscribed),
	}
	listDevices(r.DeviceListStrategy, uuids, resp)
	for _, m := range r.Library.Mounts() {
		resp.Mounts = append(resp.Mounts, &pluginapi.Mount{ContainerPath: m.ContainerPath, HostPath: m.HostPath, ReadOnly: true})
	}
	return resp
}

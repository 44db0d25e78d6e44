package allocator

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// Environment variables read by the HAMi-core library in the container.
const (
	EnvVisibleDevices = "NVIDIA_VISIBLE_DEVICES"
	// EnvMemoryLimitPrefix + i is the memory limit of the i-th visible GPU.
	EnvMemoryLimitPrefix = "CUDA_DEVICE_MEMORY_LIMIT_"
	EnvSMLimit           = "CUDA_DEVICE_SM_LIMIT"
	EnvSharedCache       = "CUDA_DEVICE_MEMORY_SHARED_CACHE"
	// EnvOversubscribe lets HAMi-core back allocations beyond the GPU's
	// free memory with host memory.
	EnvOversubscribe = "CUDA_OVERSUBSCRIBE"
)

// PreloadContainerPath is where the preload file appears in the container.
const PreloadContainerPath = "/etc/ld.so.preload"

// ResponseConfig says what a container gets besides its devices.
type ResponseConfig struct {
	// DeviceListStrategy is how the GPUs reach the container runtime, one
	// of config.DeviceListStrategies; empty means config.StrategyEnvVar.
	DeviceListStrategy string
	// LibraryHostPath is the HAMi-core library on the node; empty: no
	// library is mounted.
	LibraryHostPath string
	// LibraryContainerPath is where the library appears in the container.
	LibraryContainerPath string
	// PreloadHostPath is the node file mounted as /etc/ld.so.preload.
	PreloadHostPath string
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
	uuids := make([]string, 0, len(c.Devices))
	env := map[string]string{}
	for i, d := range c.Devices {
		uuids = append(uuids, d.UUID)
		env[EnvMemoryLimitPrefix+strconv.Itoa(i)] = fmt.Sprintf("%dm", d.MemoryMiB)
	}
	// The scheduler gives a container the same share of each of its GPUs.
	cores := int32(0)
	if len(c.Devices) > 0 {
		cores = c.Devices[0].Cores
	}
	// An exclusive container holds all of a GPU's cores, which core
	// scaling may put above 100; the library's limit is a percentage of
	// the physical GPU.
	env[EnvSMLimit] = strconv.Itoa(int(min(cores, 100)))
	env[EnvSharedCache] = fmt.Sprintf("/tmp/tessera-vgpu-%s-%s.cache", podUID, c.Name)
	if r.MemoryOversubscribed {
		env[EnvOversubscribe] = "true"
	}

	resp := &pluginapi.ContainerAllocateResponse{Envs: env}
	listDevices(r.DeviceListStrategy, uuids, resp)
	if r.LibraryHostPath != "" {
		resp.Mounts = append(resp.Mounts,
			&pluginapi.Mount{ContainerPath: r.LibraryContainerPath, HostPath: r.LibraryHostPath, ReadOnly: true},
			&pluginapi.Mount{ContainerPath: PreloadContainerPath, HostPath: r.PreloadHostPath, ReadOnly: true},
		)
	}
	return resp
}

package hamicore

import (
	"fmt"
	"strconv"
	"strings"
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

// NoVisibleDevices, as NVIDIA_VISIBLE_DEVICES, tells the NVIDIA container
// toolkit's own injection to add no GPU: CDI devices already carry them,
// and CUDA images set NVIDIA_VISIBLE_DEVICES=all, which would otherwise
// hand a container every GPU of the node where the toolkit still honours
// the variable.
const NoVisibleDevices = "void"

// Share is the part of one GPU a container holds.
type Share struct {
	// UUID is the physical GPU.
	UUID string
	// MemoryMiB is the memory the container may use on it.
	MemoryMiB int64
	// Cores is the percentage of the GPU's compute the container may use;
	// 0 sets no limit.
	Cores int32
}

// Env returns the variables of a container holding the shares: the GPUs
// visible in the order given, the i-th one's memory limit as
// CUDA_DEVICE_MEMORY_LIMIT_<i>, the compute limit, and the file through
// which the container's processes share their accounting. Oversubscribed
// says that the GPUs are published with more memory than they have
// (memory scaling above 1), which only HAMi-core's over-subscription
// makes safe.
func Env(shares []Share, sharedCache string, oversubscribed bool) map[string]string {
	uuids := make([]string, 0, len(shares))
	env := make(map[string]string, len(shares)+3)
	for i, s := range shares {
		uuids = append(uuids, s.UUID)
		env[EnvMemoryLimitPrefix+strconv.Itoa(i)] = fmt.Sprintf("%dm", s.MemoryMiB)
	}
	env[EnvVisibleDevices] = strings.Join(uuids, ",")
	// A container gets the same share of compute on each of its GPUs.
	cores := int32(0)
	if len(shares) > 0 {
		cores = shares[0].Cores
	}
	// An exclusive container holds all of a GPU's cores, which core
	// scaling may put above 100; the library's limit is a percentage of
	// the physical GPU.
	env[EnvSMLimit] = strconv.Itoa(int(min(cores, 100)))
	env[EnvSharedCache] = sharedCache
	if oversubscribed {
		env[EnvOversubscribe] = "true"
	}
	return env
}

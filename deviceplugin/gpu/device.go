package gpu

import "strconv"

// Device is one physical GPU as the backend reports it, before any scaling.
type Device struct {
	// UUID identifies the GPU, such as "GPU-8f3c...".
	UUID string
	// Index is the GPU's index on the node.
	Index int
	// Model is the product name, such as "NVIDIA A100-SXM4-40GB".
	Model string
	// MemoryMiB is the GPU's total memory in MiB.
	MemoryMiB int64
	// NUMANode is the NUMA node the GPU is attached to, or -1 when unknown.
	NUMANode int
	// Health says whether the GPU can take work.
	Health Health
	// DeviceNodes are the device files a container needs to use the GPU,
	// such as /dev/nvidia0, besides the driver's control devices.
	DeviceNodes []string
}

// Health is a GPU's health and, when unhealthy, why.
type Health struct {
	// Healthy is false after a critical error until the GPU recovers.
	Healthy bool
	// Message says why an unhealthy GPU is unhealthy, or how it recovered.
	Message string
}

// HealthEvent says that one GPU's health changed.
type HealthEvent struct {
	// UUID is the GPU whose health changed.
	UUID string
	// Health is its new health.
	Health Health
}

// Healthy is the health of a GPU with no known error.
func Healthy() Health { return Health{Healthy: true} }

// Unhealthy is the health of a GPU that reported an error.
func Unhealthy(message string) Health { return Health{Message: message} }

// DeviceNode returns the device file of the GPU with the minor number.
func DeviceNode(minor int) string { return "/dev/nvidia" + strconv.Itoa(minor) }

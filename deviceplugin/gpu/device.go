package gpu

import (
	"strconv"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

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
	// MIG is set when the device is a MIG instance of a GPU in MIG mode;
	// UUID is then the instance's, and Index, Model and NUMANode its GPU's.
	MIG *MIG
	// MIGGeometry is set on a GPU in MIG mode whose instances the plugin
	// makes on demand: how it can be cut. The GPU is then the device.
	MIGGeometry *gpuv1alpha1.MIGGeometry
}

// MIG says what slice of which GPU a MIG instance is.
type MIG struct {
	// ParentUUID is the GPU the instance is cut from.
	ParentUUID string
	// Profile is NVIDIA's name of the instance's shape, such as 1g.10gb.
	Profile string
	// GPUInstanceID and ComputeInstanceID identify it on its GPU.
	GPUInstanceID int
	// ComputeInstanceID identifies the compute instance in its GPU instance.
	ComputeInstanceID int
	// ComputePercent is its share of the GPU's compute.
	ComputePercent int
	// CapsProblem, when set, says why the instance's capability device
	// files (/dev/nvidia-caps/nvidia-cap*) are not known. A container that
	// gets the instance through CDI then lacks them and cannot open it;
	// the NVIDIA container toolkit finds them itself otherwise.
	CapsProblem *CapsProblem
}

// MIGMinorsFile is the driver's table of MIG capability device minor
// numbers, relative to the proc file system's root.
const MIGMinorsFile = "driver/nvidia-caps/mig-minors"

// CapsProblem says why a MIG instance's capability device files could not
// be found.
type CapsProblem struct {
	// File is the file they were looked up in: the driver's table of
	// their minor numbers.
	File string
	// Reason says what went wrong, such as the file being unreadable or
	// not listing the instance.
	Reason string
}

// Message is the problem as a person reads it on the GPUNode.
func (p *CapsProblem) Message() string {
	return "capability devices not found in " + p.File + ": " + p.Reason +
		"; a container given this instance through CDI cannot open it"
}

// HealthOf reports whether an event about the GPU with this UUID concerns
// the device: its own, or its GPU's when it is a MIG instance.
func (d *Device) HealthOf(uuid string) bool {
	return d.UUID == uuid || (d.MIG != nil && d.MIG.ParentUUID == uuid)
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

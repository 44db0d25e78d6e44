package dra

import (
	"strconv"

	resourceapi "k8s.io/api/resource/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// DriverName is Tessera's DRA driver.
const DriverName = "gpu.tessera.dev"

// Capacities of each published GPU, consumed by every allocation of it.
const (
	// CapacityMemory is the GPU's memory in bytes.
	CapacityMemory resourceapi.QualifiedName = "memory"
	// CapacityCores is the GPU's compute in percent (100 per GPU before
	// core scaling).
	CapacityCores resourceapi.QualifiedName = "cores"
	// CapacityShares is how many allocations the GPU takes; each one
	// consumes one unless it asks for more.
	CapacityShares resourceapi.QualifiedName = "shares"
)

// Attributes of each published GPU, for CEL selectors and constraints.
const (
	AttributeUUID     resourceapi.QualifiedName = "uuid"
	AttributeIndex    resourceapi.QualifiedName = "index"
	AttributeModel    resourceapi.QualifiedName = "model"
	AttributeNUMANode resourceapi.QualifiedName = "numaNode"
	// AttributeMIGProfile and AttributeParentUUID are set on MIG
	// instances only, which are never shared (their share limit is 1).
	AttributeMIGProfile resourceapi.QualifiedName = "migProfile"
	AttributeParentUUID resourceapi.QualifiedName = "parentUUID"
)

// DeviceName is the published name of a GPU: gpu-<index>, or for a MIG
// instance, which shares its GPU's index, gpu-<index>-mig-<GPU
// instance>-<compute instance>.
func DeviceName(g gpuv1alpha1.GPUDevice) string {
	name := "gpu-" + strconv.Itoa(int(g.Index))
	if g.MIG != nil {
		name += "-mig-" + strconv.Itoa(int(g.MIG.GPUInstanceID)) + "-" + strconv.Itoa(int(g.MIG.ComputeInstanceID))
	}
	return name
}

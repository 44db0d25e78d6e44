package dra

import (
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
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
)

// DeviceName is the published name of the GPU with the index.
func DeviceName(index int) string { return "gpu-" + strconv.Itoa(index) }

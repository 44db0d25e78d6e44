// Package dradriver names what Tessera's DRA driver publishes: the driver,
// and the attributes and consumable capacities of each GPU device. The node
// daemon publishes devices under these names, and the admission webhook
// writes the claims that select and consume them, so both share one
// definition.
package dradriver

import resourceapi "k8s.io/api/resource/v1"

// DriverName is Tessera's DRA driver, also the domain of its attributes
// and capacities in CEL (device.attributes["gpu.tessera.dev"]).
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

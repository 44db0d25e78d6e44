package v1alpha1

import resourceapi "k8s.io/api/resource/v1"

// What Tessera's DRA driver publishes: the driver, and the attributes and
// consumable capacities of each GPU device. The node daemon publishes
// devices under these names, the admission webhook writes the claims that
// select and consume them, and users' CEL selectors name them, so they
// are part of the API and change with its version.

// DRADriverName is Tessera's DRA driver, also the domain of its attributes
// and capacities in CEL (device.attributes["gpu.tessera.dev"]): the API
// group's name.
const DRADriverName = GroupName

// Capacities of each published GPU, consumed by every allocation of it.
const (
	// DRACapacityMemory is the GPU's memory in bytes.
	DRACapacityMemory resourceapi.QualifiedName = "memory"
	// DRACapacityCores is the GPU's compute in percent (100 per GPU before
	// core scaling).
	DRACapacityCores resourceapi.QualifiedName = "cores"
	// DRACapacityShares is how many allocations the GPU takes; each one
	// consumes one unless it asks for more.
	DRACapacityShares resourceapi.QualifiedName = "shares"
)

// Attributes of each published GPU, for CEL selectors and constraints.
const (
	DRAAttributeUUID     resourceapi.QualifiedName = "uuid"
	DRAAttributeIndex    resourceapi.QualifiedName = "index"
	DRAAttributeModel    resourceapi.QualifiedName = "model"
	DRAAttributeNUMANode resourceapi.QualifiedName = "numaNode"
	// DRAAttributeMIGProfile and DRAAttributeParentUUID are set on MIG
	// instances only, which are never shared (their share limit is 1).
	DRAAttributeMIGProfile resourceapi.QualifiedName = "migProfile"
	DRAAttributeParentUUID resourceapi.QualifiedName = "parentUUID"
	// DRAAttributeMIGStart and DRAAttributeMIGSize are set on the MIG
	// instances of a GPU whose instances are made on demand, one device
	// per profile and placement (the first memory slice and the number of
	// slices): the instance is made when the claim is prepared. Such a
	// device also has DRAAttributeMIGProfile, its GPU's UUID as both
	// DRAAttributeUUID and DRAAttributeParentUUID, the profile's memory
	// and compute and one share as capacity, and it consumes its GPU's
	// counters, so that no two instances allocated at once overlap.
	DRAAttributeMIGStart resourceapi.QualifiedName = "migStart"
	DRAAttributeMIGSize  resourceapi.QualifiedName = "migSize"
)

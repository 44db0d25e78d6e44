package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// GPUNode is the GPU inventory of one Kubernetes node. It has the same name
// as the Node. Its status is written by that node's device plugin when
// something in it changes, and its Ready condition also by the scheduler
// when the plugin stops renewing its node's Lease; its spec is for the
// administrator. Liveness is not in the GPUNode: the plugin renews a
// coordination.k8s.io Lease named like the node.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=gn;gpun,categories=tessera
// +kubebuilder:printcolumn:name="GPUs",type=integer,JSONPath=`.status.gpuCount`,description="Number of GPUs on the node"
// +kubebuilder:printcolumn:name="Model",type=string,JSONPath=`.status.models`,description="GPU models on the node"
// +kubebuilder:printcolumn:name="Memory(MiB)",type=integer,JSONPath=`.status.memoryMiB`,description="Total GPU memory in MiB"
// +kubebuilder:printcolumn:name="Allocatable(MiB)",type=integer,JSONPath=`.status.allocatableMemoryMiB`,description="GPU memory in MiB on healthy, uncordoned GPUs"
// +kubebuilder:printcolumn:name="Free(MiB)",type=integer,JSONPath=`.status.freeMemoryMiB`,description="GPU memory in MiB on healthy, uncordoned GPUs not allocated to pods, as the scheduler extender (or on a DRA node its daemon, from the ResourceClaims) last published it"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Whether the node takes new GPU pods: True while its device plugin serves and renews its Lease; Unknown when the Lease went stale"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="Why the node is or is not ready, such as Registered or HeartbeatStale"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GPUNode struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the administrator's decisions about the node's GPUs.
	// +optional
	Spec GPUNodeSpec `json:"spec,omitempty"`

	// status is the node's GPU inventory as its device plugin last reported it.
	// +optional
	Status GPUNodeStatus `json:"status,omitempty"`
}

// GPUNodeSpec holds the administrator's decisions about a node's GPUs.
type GPUNodeSpec struct {
	// cordonedDevices lists the UUIDs of GPUs that take no new allocations.
	// Allocations already on them stay until their pods end.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=128
	CordonedDevices []string `json:"cordonedDevices,omitempty"`
}

// GPUNodeStatus is a node's GPU inventory as its device plugin reports it.
type GPUNodeStatus struct {
	// devices are the node's physical GPUs, after memory and core scaling.
	// +optional
	// +listType=map
	// +listMapKey=uuid
	// +kubebuilder:validation:MaxItems=64
	Devices []GPUDevice `json:"devices,omitempty"`

	// driverVersion is the GPU driver version, or "simulated" for simulated GPUs.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	DriverVersion string `json:"driverVersion,omitempty"`

	// gpuCount is the number of devices, for display.
	// +optional
	// +kubebuilder:validation:Minimum=0
	GPUCount int32 `json:"gpuCount,omitempty"`

	// models is a comma-separated list of the distinct GPU models, for display.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Models string `json:"models,omitempty"`

	// memoryMiB is the memory of all devices in MiB, for display.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MemoryMiB int64 `json:"memoryMiB,omitempty"`

	// allocatableMemoryMiB is the memory in MiB of the healthy, uncordoned
	// devices, for display.
	// +optional
	// +kubebuilder:validation:Minimum=0
	AllocatableMemoryMiB int64 `json:"allocatableMemoryMiB,omitempty"`

	// freeMemoryMiB is allocatableMemoryMiB less the memory allocated to
	// pods on those devices, for display. On a device-plugin node it is
	// written by the scheduler extender, which knows every allocation; on
	// a DRA node by the node's daemon, from the ResourceClaims allocated
	// on its GPUs. Either publishes changes at most every few seconds, so
	// it may lag allocations by that much.
	// +optional
	// +kubebuilder:validation:Minimum=0
	FreeMemoryMiB *int64 `json:"freeMemoryMiB,omitempty"`

	// kubeletAPI is how the node's daemon serves the kubelet: DevicePlugin
	// (Tessera's scheduler places the GPU pods and records them in
	// GPUAllocations; the default) or DRA (the daemon publishes the GPUs as
	// ResourceSlices of driver gpu.tessera.dev and kube-scheduler allocates
	// them in ResourceClaims). Tessera's scheduler leaves DRA nodes alone,
	// and their daemon writes freeMemoryMiB from the allocated claims.
	// +optional
	KubeletAPI KubeletAPI `json:"kubeletAPI,omitempty"`

	// podIdentification is how the node's device plugin learns which pod a
	// kubelet Allocate call serves, which the call itself does not say:
	// InFlight (the node's one in-flight GPUAllocation: Tessera's scheduler
	// binds a GPU pod there only once the last one is served; the default)
	// or PodResources (the kubelet's pod-resources API names the pod being
	// admitted, so any number of GPU pods may be bound to the node at once).
	// +optional
	PodIdentification PodIdentification `json:"podIdentification,omitempty"`

	// conditions describe the device plugin's state. Type "Ready" is True
	// while the plugin is registered with the kubelet and serving, False
	// when it is not (the reason says why), and Unknown with reason
	// HeartbeatStale when the scheduler found the node's Lease, which the
	// plugin renews, older than the scheduler allows. The node takes new
	// pods only while Ready is True and its Lease is fresh.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// KubeletAPI says how a node's daemon serves the kubelet.
// +kubebuilder:validation:Enum=DevicePlugin;DRA
type KubeletAPI string

const (
	// KubeletAPIDevicePlugin: the kubelet's device-plugin API, with GPU
	// pods placed by Tessera's scheduler.
	KubeletAPIDevicePlugin KubeletAPI = "DevicePlugin"
	// KubeletAPIDRA: the kubelet's DRA plugin API, with GPUs allocated by
	// kube-scheduler in ResourceClaims.
	KubeletAPIDRA KubeletAPI = "DRA"
)

// PodIdentification says how a node's device plugin learns which pod the
// kubelet allocates GPUs for.
// +kubebuilder:validation:Enum=InFlight;PodResources
type PodIdentification string

const (
	// PodIdentificationInFlight: the pod is the one whose GPUAllocation is
	// in flight on the node, so there is at most one.
	PodIdentificationInFlight PodIdentification = "InFlight"
	// PodIdentificationPodResources: the pod is the one the kubelet's
	// pod-resources API lists while its GPUAllocation is in flight, the
	// one the kubelet is admitting.
	PodIdentificationPodResources PodIdentification = "PodResources"
)

// GPUHealth says whether a GPU can take work.
// +kubebuilder:validation:Enum=Healthy;Unhealthy
type GPUHealth string

const (
	// GPUHealthy marks a GPU that can take work.
	GPUHealthy GPUHealth = "Healthy"
	// GPUUnhealthy marks a GPU that reported an error, such as an XID or ECC event.
	GPUUnhealthy GPUHealth = "Unhealthy"
)

// GPUNodeReady is the condition type set while a node's device plugin serves.
const GPUNodeReady = "Ready"

// GPUNodeHAMiCoreReady is the condition type that says whether the
// HAMi-core library, which enforces GPU slices' memory and compute limits
// inside containers, is on the node. False with reason
// HAMiCoreLibraryMissing: the plugin is configured to hand it to
// containers, but it is not there.
const GPUNodeHAMiCoreReady = "HAMiCoreReady"

// Reasons of the HAMiCoreReady condition.
const (
	// HAMiCoreInstalled: the library is on the node.
	HAMiCoreInstalled = "Installed"
	// HAMiCoreLibraryMissing: the plugin is configured with a library
	// path, but no library is there.
	HAMiCoreLibraryMissing = "LibraryMissing"
	// HAMiCoreNotConfigured: the plugin hands containers no library; their
	// limits are advisory.
	HAMiCoreNotConfigured = "NotConfigured"
)

// GPUNodeHeartbeatStale is the reason of the Ready condition the scheduler
// sets to Unknown when the node's device plugin stopped renewing its Lease.
const GPUNodeHeartbeatStale = "HeartbeatStale"

// GPUDevice is one physical GPU of a node.
type GPUDevice struct {
	// uuid is the GPU's unique identifier, as NVML reports it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	UUID string `json:"uuid"`

	// index is the GPU's index on the node, as NVML numbers it.
	// +required
	// +kubebuilder:validation:Minimum=0
	Index int32 `json:"index"`

	// model is the GPU's product name, such as "NVIDIA A100-SXM4-80GB".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Model string `json:"model"`

	// memoryMiB is the memory that may be allocated on the GPU, in MiB,
	// after the device plugin's memory scaling.
	// +required
	// +kubebuilder:validation:Minimum=0
	MemoryMiB int64 `json:"memoryMiB"`

	// cores is the compute that may be allocated on the GPU, in percent of
	// one GPU (100 unless the device plugin scales cores).
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	Cores int32 `json:"cores"`

	// shareLimit is how many containers may share the GPU at once.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	ShareLimit int32 `json:"shareLimit"`

	// numaNode is the NUMA node the GPU is attached to, or -1 when unknown.
	// +optional
	// +kubebuilder:validation:Minimum=-1
	NUMANode int32 `json:"numaNode,omitempty"`

	// health says whether the GPU can take work.
	// +required
	Health GPUHealth `json:"health"`

	// healthMessage says why an unhealthy GPU is unhealthy.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	HealthMessage string `json:"healthMessage,omitempty"`

	// mig is set when the device is a MIG instance: a slice of a GPU in MIG
	// mode, as the administrator laid it out. A MIG instance is handed out
	// whole, to one container at a time, and never shared by HAMi-core
	// limits; the GPU it is cut from is not a device of its own.
	// +optional
	MIG *MIGInstance `json:"mig,omitempty"`

	// migGeometry is set on a GPU in MIG mode whose instances the node's
	// daemon makes on demand (dynamic MIG): the profiles the GPU can be
	// cut into and where each may lie. Such a GPU serves MIG instances
	// only; each container placed on it gets one instance, whole, made
	// when the kubelet allocates it and destroyed when the pod ends.
	// +optional
	MIGGeometry *MIGGeometry `json:"migGeometry,omitempty"`
}

// MIGGeometry is how a GPU in MIG mode can be cut into instances. Its
// memory is in slices (8 on an A100 or H100, at most 16), numbered from
// 0; an instance takes a run of them, and two instances never share one.
type MIGGeometry struct {
	// profiles are the GPU instance profiles the GPU offers.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Profiles []MIGProfile `json:"profiles"`
}

// MIGProfile is one GPU instance profile of a GPU in MIG mode.
type MIGProfile struct {
	// name is the profile as NVIDIA names it, such as "1g.10gb".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name"`

	// profileID is NVML's ID of the GPU instance profile, which the
	// node's daemon creates the instance by.
	// +required
	// +kubebuilder:validation:Minimum=0
	ProfileID int32 `json:"profileID"`

	// memoryMiB is an instance's memory, in MiB.
	// +required
	// +kubebuilder:validation:Minimum=0
	MemoryMiB int64 `json:"memoryMiB"`

	// computePercent is an instance's share of the GPU's compute, in
	// percent (14 for one of seven slices).
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	ComputePercent int32 `json:"computePercent"`

	// placements are where an instance of the profile may lie, in the
	// order they are tried.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Placements []MIGPlacement `json:"placements"`
}

// MIGPlacement is a run of a GPU's memory slices that one instance may
// take.
type MIGPlacement struct {
	// start is the first memory slice.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=15
	Start int32 `json:"start"`

	// size is the number of memory slices.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	Size int32 `json:"size"`
}

// MIGInstance says what slice of which GPU a MIG device is.
type MIGInstance struct {
	// parentUUID is the UUID of the GPU the instance is cut from.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	ParentUUID string `json:"parentUUID"`

	// profile is the instance's MIG profile, as NVIDIA names it, such as
	// "1g.10gb" (compute slices and memory) or "1c.2g.20gb".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Profile string `json:"profile"`

	// gpuInstanceID is the GPU instance's ID on its GPU.
	// +optional
	// +kubebuilder:validation:Minimum=0
	GPUInstanceID int32 `json:"gpuInstanceID,omitempty"`

	// computeInstanceID is the compute instance's ID in its GPU instance.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ComputeInstanceID int32 `json:"computeInstanceID,omitempty"`

	// computePercent is the instance's share of its GPU's compute, in
	// percent (14 for one of seven slices).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	ComputePercent int32 `json:"computePercent,omitempty"`

	// capabilityProblem, when set, says why the node's daemon could not
	// find the instance's capability device files (/dev/nvidia-caps/*):
	// the file it read and what went wrong. A container given the
	// instance through CDI (device-list strategy cdi, in either kubelet
	// API) then lacks them and cannot open the instance; with the other
	// strategies the NVIDIA container toolkit finds them itself. It is
	// read again with the MIG layout.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	CapabilityProblem string `json:"capabilityProblem,omitempty"`
}

// GPUNodeList is a list of GPUNodes.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type GPUNodeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the GPUNodes.
	Items []GPUNode `json:"items"`
}

// GPUAllocation records the GPUs that the scheduler gave to one pod. It has
// the same name and namespace as the pod and is owned by it. The scheduler
// extender writes its spec; the node's device plugin writes its status.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ga;gpua,categories=tessera
// +kubebuilder:selectablefield:JSONPath=`.spec.nodeName`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeName`
// +kubebuilder:printcolumn:name="GPUs",type=string,JSONPath=`.spec.gpuIndexes`,description="Indexes of the GPUs on the node that the pod got"
// +kubebuilder:printcolumn:name="Memory(MiB)",type=integer,JSONPath=`.spec.memoryMiB`,description="GPU memory in MiB over all containers"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GPUAllocation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the placement the scheduler extender chose.
	// +required
	Spec GPUAllocationSpec `json:"spec"`

	// status is how far the device plugin has served the placement. The
	// extender creates the allocation without one; the API server shows it
	// as Pending until the device plugin writes it.
	// +optional
	// +kubebuilder:default={}
	Status GPUAllocationStatus `json:"status,omitempty"`
}

// GPUAllocationSpec is the placement the scheduler extender chose for a pod.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
type GPUAllocationSpec struct {
	// podUID is the UID of the pod the GPUs are for.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	PodUID types.UID `json:"podUID"`

	// nodeName is the node the pod is bound to.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	NodeName string `json:"nodeName"`

	// containers are the pod's containers that got GPUs, in the order the
	// kubelet allocates them: init containers first, then app containers.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Containers []ContainerAllocation `json:"containers"`

	// gpuCount is the number of distinct GPUs over all containers, for display.
	// +optional
	// +kubebuilder:validation:Minimum=0
	GPUCount int32 `json:"gpuCount,omitempty"`

	// gpuIndexes are the indexes of the distinct GPUs over all containers,
	// comma-separated in ascending order, such as "0,3", for display.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	GPUIndexes string `json:"gpuIndexes,omitempty"`

	// memoryMiB is the GPU memory over all containers in MiB, for display.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MemoryMiB int64 `json:"memoryMiB,omitempty"`
}

// ContainerAllocation is the GPUs given to one container.
type ContainerAllocation struct {
	// name is the container's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// kind says when the container runs, which decides whether its GPUs are
	// held at the same time as the other containers': Init containers run
	// one after another before the rest, Sidecar (restartable init)
	// containers and App containers run for the pod's life.
	// +required
	Kind ContainerKind `json:"kind"`

	// devices are the GPUs the container gets, with its slice of each.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Devices []DeviceAllocation `json:"devices"`
}

// ContainerKind says when a container runs within its pod.
// +kubebuilder:validation:Enum=Init;Sidecar;App
type ContainerKind string

const (
	// ContainerInit is an init container: it runs to completion before the next starts.
	ContainerInit ContainerKind = "Init"
	// ContainerSidecar is a restartable init container: it runs for the pod's life.
	ContainerSidecar ContainerKind = "Sidecar"
	// ContainerApp is an app container.
	ContainerApp ContainerKind = "App"
)

// DeviceAllocation is a container's slice of one GPU.
type DeviceAllocation struct {
	// uuid is the GPU's UUID.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	UUID string `json:"uuid"`

	// index is the GPU's index on the node.
	// +required
	// +kubebuilder:validation:Minimum=0
	Index int32 `json:"index"`

	// memoryMiB is the GPU memory the container may use, in MiB.
	// +required
	// +kubebuilder:validation:Minimum=0
	MemoryMiB int64 `json:"memoryMiB"`

	// cores is the share of the GPU's compute the container may use, in
	// percent; 0 means no limit is enforced.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	Cores int32 `json:"cores"`

	// mig is set when the GPU's MIG instances are made on demand: the
	// instance the container gets, which the node's daemon makes when the
	// kubelet allocates the container. memoryMiB and cores are then the
	// instance's.
	// +optional
	MIG *MIGAllocation `json:"mig,omitempty"`
}

// MIGAllocation is a MIG instance that the scheduler placed on a GPU whose
// instances are made on demand.
type MIGAllocation struct {
	// profile is the instance's profile, such as "1g.10gb".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Profile string `json:"profile"`

	// profileID is NVML's ID of the GPU instance profile.
	// +required
	// +kubebuilder:validation:Minimum=0
	ProfileID int32 `json:"profileID"`

	// placement is the run of memory slices the instance takes.
	// +required
	Placement MIGPlacement `json:"placement"`
}

// AllocationPhase is how far the device plugin has served an allocation.
// +kubebuilder:validation:Enum=Pending;Allocated;Failed
type AllocationPhase string

const (
	// AllocationPending means the pod is bound and the kubelet has not yet
	// been served for all its GPU containers. An allocation whose status is
	// still empty is Pending too.
	AllocationPending AllocationPhase = "Pending"
	// AllocationAllocated means the kubelet has been served for every
	// container of the allocation.
	AllocationAllocated AllocationPhase = "Allocated"
	// AllocationFailed means the device plugin could not serve the
	// allocation; the message says why, and the GPUs are free again.
	AllocationFailed AllocationPhase = "Failed"
)

// GPUAllocationStatus is how far the device plugin has served an allocation.
type GPUAllocationStatus struct {
	// phase is Pending, Allocated or Failed.
	// +optional
	// +kubebuilder:default=Pending
	Phase AllocationPhase `json:"phase,omitempty"`

	// servedContainers are the names of the containers the kubelet has been
	// given devices for, in order.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	ServedContainers []string `json:"servedContainers,omitempty"`

	// allocatedTime is when the allocation became Allocated or Failed.
	// +optional
	AllocatedTime *metav1.Time `json:"allocatedTime,omitempty"`

	// message says why an allocation failed.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// GPUAllocationList is a list of GPUAllocations.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type GPUAllocationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the GPUAllocations.
	Items []GPUAllocation `json:"items"`
}

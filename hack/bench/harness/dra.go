package harness

import (
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/dra"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// claimName is the name of the pod's ResourceClaim in the DRA row, and the
// name the pod gives it in its spec; claimRequest names the claim's one
// request.
const (
	claimName    = "gpus"
	claimRequest = "gpu"
)

// ResourceSlice is the ResourceSlice Tessera's node daemon publishes in
// DRA mode for a node with these GPUs: one pool named after the node, one
// device per GPU built by the daemon's own code (dra.Device). Its name is
// of the form the daemon's ResourceSlice controller gives the pool's first
// slice ("00000-<driver>-<node>-" and a suffix), which is how that
// controller recognises a slice it keeps.
func ResourceSlice(node string, gpus []gpuv1alpha1.GPUDevice) *resourceapi.ResourceSlice {
	devices := make([]resourceapi.Device, len(gpus))
	for i, g := range gpus {
		devices[i] = dra.Device(g)
	}
	return &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "00000-" + gpuv1alpha1.DRADriverName + "-" + node + "-bench"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   gpuv1alpha1.DRADriverName,
			NodeName: ptr.To(node),
			Pool:     resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			Devices:  devices,
		},
	}
}

// ResourceClaim is the shape as a claim of Tessera's DeviceClass: Count
// distinct GPUs, each with the shape's memory and cores as consumed
// capacity. A shape with no memory takes each GPU's whole memory (the
// capacity's default), as a count alone does in the other rows.
func ResourceClaim(name string, s Shape) *resourceapi.ResourceClaim {
	exact := &resourceapi.ExactDeviceRequest{
		DeviceClassName: gpuv1alpha1.DRADriverName,
		AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
		Count:           s.Count,
	}
	requests := map[resourceapi.QualifiedName]resource.Quantity{}
	if s.MemoryMiB > 0 {
		requests[gpuv1alpha1.DRACapacityMemory] = *resource.NewQuantity(s.MemoryMiB<<20, resource.BinarySI)
	}
	if s.Cores > 0 {
		requests[gpuv1alpha1.DRACapacityCores] = *resource.NewQuantity(s.Cores, resource.DecimalSI)
	}
	if len(requests) > 0 {
		exact.Capacity = &resourceapi.CapacityRequirements{Requests: requests}
	}
	claim := resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: claimRequest, Exactly: exact}}}
	if s.Count > 1 {
		// Without it, kube-scheduler may give two shares of one GPU.
		uuid := resourceapi.FullyQualifiedName(gpuv1alpha1.DRADriverName + "/" + string(gpuv1alpha1.DRAAttributeUUID))
		claim.Constraints = []resourceapi.DeviceConstraint{{DistinctAttribute: &uuid}}
	}
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Spec:       resourceapi.ResourceClaimSpec{Devices: claim},
	}
}

// ClaimAllocation is the allocation kube-scheduler writes into a claim of
// ResourceClaim's form placed on these GPUs of the node: one result per
// GPU from the node's pool, each a share of the device (its own share
// ID) consuming the GPU's memory and cores the placement gave and one
// share, and the node as where the claim may be used.
func ClaimAllocation(node string, devices []gpuv1alpha1.DeviceAllocation) *resourceapi.AllocationResult {
	results := make([]resourceapi.DeviceRequestAllocationResult, len(devices))
	for i, d := range devices {
		results[i] = resourceapi.DeviceRequestAllocationResult{
			Request: claimRequest,
			Driver:  gpuv1alpha1.DRADriverName,
			Pool:    node,
			Device:  dra.DeviceName(gpuv1alpha1.GPUDevice{Index: d.Index}),
			ShareID: ptr.To(uuid.NewUUID()),
			ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{
				gpuv1alpha1.DRACapacityMemory: *resource.NewQuantity(d.MemoryMiB<<20, resource.BinarySI),
				gpuv1alpha1.DRACapacityCores:  *resource.NewQuantity(int64(d.Cores), resource.DecimalSI),
				gpuv1alpha1.DRACapacityShares: *resource.NewQuantity(1, resource.DecimalSI),
			},
		}
	}
	return &resourceapi.AllocationResult{
		Devices: resourceapi.DeviceAllocationResult{Results: results},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}},
	}
}

// DeviceIndexes are the GPU index of each device name a node's slice lists.
func DeviceIndexes(gpusPerNode int) map[string]int {
	out := make(map[string]int, gpusPerNode)
	for i := range gpusPerNode {
		out[dra.DeviceName(gpuv1alpha1.GPUDevice{Index: int32(i)})] = i
	}
	return out
}

// ClaimHolds is what an allocated claim holds on its node's GPUs, as
// Tessera counts a pod's holds, and the node; false while the claim is
// not allocated. indexes are deviceIndexes.
func ClaimHolds(claim *resourceapi.ResourceClaim, indexes map[string]int) (string, []placement.Hold, bool) {
	if claim.Status.Allocation == nil {
		return "", nil, false
	}
	var (
		node  string
		holds []placement.Hold
	)
	for _, r := range claim.Status.Allocation.Devices.Results {
		index, ok := indexes[r.Device]
		if !ok || r.Driver != gpuv1alpha1.DRADriverName {
			continue
		}
		node = r.Pool
		h := placement.Hold{UUID: GPUUUID(r.Pool, index), Shares: 1}
		if q, ok := r.ConsumedCapacity[gpuv1alpha1.DRACapacityMemory]; ok {
			h.MemoryMiB = q.Value() >> 20
		}
		if q, ok := r.ConsumedCapacity[gpuv1alpha1.DRACapacityCores]; ok {
			h.Cores = int32(q.Value())
		}
		holds = append(holds, h)
	}
	return node, holds, node != ""
}

package main

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/dra"
	"github.com/tessera-gpu/tessera/dradriver"
)

// claimName is the name of the pod's ResourceClaim in the DRA row, and the
// name the pod gives it in its spec.
const claimName = "gpus"

// resourceSlice is the ResourceSlice Tessera's node daemon publishes in
// DRA mode for a node with these GPUs: one pool named after the node, one
// device per GPU built by the daemon's own code (dra.Device).
func resourceSlice(node string, gpus []gpuv1alpha1.GPUDevice) *resourceapi.ResourceSlice {
	devices := make([]resourceapi.Device, len(gpus))
	for i, g := range gpus {
		devices[i] = dra.Device(g)
	}
	return &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + dradriver.DriverName},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   dradriver.DriverName,
			NodeName: ptr.To(node),
			Pool:     resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			Devices:  devices,
		},
	}
}

// resourceClaim is the shape as a claim of Tessera's DeviceClass: Count
// distinct GPUs, each with the shape's memory and cores as consumed
// capacity. A shape with no memory takes each GPU's whole memory (the
// capacity's default), as a count alone does in the other rows.
func resourceClaim(name string, s Shape) *resourceapi.ResourceClaim {
	exact := &resourceapi.ExactDeviceRequest{
		DeviceClassName: dradriver.DriverName,
		AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
		Count:           s.Count,
	}
	requests := map[resourceapi.QualifiedName]resource.Quantity{}
	if s.MemoryMiB > 0 {
		requests[dradriver.CapacityMemory] = *resource.NewQuantity(s.MemoryMiB<<20, resource.BinarySI)
	}
	if s.Cores > 0 {
		requests[dradriver.CapacityCores] = *resource.NewQuantity(s.Cores, resource.DecimalSI)
	}
	if len(requests) > 0 {
		exact.Capacity = &resourceapi.CapacityRequirements{Requests: requests}
	}
	claim := resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: exact}}}
	if s.Count > 1 {
		// Without it, kube-scheduler may give two shares of one GPU.
		uuid := resourceapi.FullyQualifiedName(dradriver.DriverName + "/" + string(dradriver.AttributeUUID))
		claim.Constraints = []resourceapi.DeviceConstraint{{DistinctAttribute: &uuid}}
	}
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: benchNamespace},
		Spec:       resourceapi.ResourceClaimSpec{Devices: claim},
	}
}

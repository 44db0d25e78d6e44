package framework

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// MarkServed sets a's status to what the device plugin writes once it has
// served every container of the allocation: Allocated, each container
// named served, at this time. The caller writes it with UpdateStatus.
func MarkServed(a *gpuv1alpha1.GPUAllocation) {
	var served []string
	for _, c := range a.Spec.Containers {
		served = append(served, c.Name)
	}
	a.Status.Phase = gpuv1alpha1.AllocationAllocated
	a.Status.ServedContainers = served
	a.Status.AllocatedTime = ptr.To(metav1.Now())
}

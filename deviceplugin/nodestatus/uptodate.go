package nodestatus

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// upToDate reports whether the GPUNode's status already holds everything
// the plugin would write: then writing it again would only cost the API
// server a write and every watcher an event.
func upToDate(current, desired *gpuv1alpha1.GPUNodeStatus) bool {
	if current.DriverVersion != desired.DriverVersion || current.GPUCount != desired.GPUCount ||
		current.Models != desired.Models || current.MemoryMiB != desired.MemoryMiB ||
		current.AllocatableMemoryMiB != desired.AllocatableMemoryMiB || current.KubeletAPI != desired.KubeletAPI ||
		current.PodIdentification != desired.PodIdentification ||
		(desired.FreeMemoryMiB != nil && !ptr.Equal(current.FreeMemoryMiB, desired.FreeMemoryMiB)) ||
		!equality.Semantic.DeepEqual(current.Devices, desired.Devices) {
		return false
	}
	for _, want := range desired.Conditions {
		got := meta.FindStatusCondition(current.Conditions, want.Type)
		if got == nil || got.Status != want.Status || got.Reason != want.Reason || got.Message != want.Message ||
			!equality.Semantic.DeepEqual(got.LastTransitionTime, want.LastTransitionTime) {
			return false
		}
	}
	return true
}

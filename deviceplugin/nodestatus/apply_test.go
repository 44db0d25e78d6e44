package nodestatus

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// TestStatusApplyCarriesEveryField pins that the apply the plugin sends
// holds every status field it computes: one left out is never written, and
// the status, never up to date, is written again at every heartbeat.
func TestStatusApplyCarriesEveryField(t *testing.T) {
	free := int64(512)
	want := gpuv1alpha1.GPUNodeStatus{
		DriverVersion: "580.65", GPUCount: 3, Models: "A100,A100 MIG 1g.10gb", MemoryMiB: 50816, AllocatableMemoryMiB: 9856,
		FreeMemoryMiB: &free, KubeletAPI: gpuv1alpha1.KubeletAPIDRA,
		Devices: []gpuv1alpha1.GPUDevice{
			{UUID: "GPU-a", Index: 1, Model: "A100", MemoryMiB: 40960, Cores: 100, ShareLimit: 10, NUMANode: 1,
				Health: gpuv1alpha1.GPUUnhealthy, HealthMessage: "XID 79"},
			{UUID: "MIG-b", Model: "A100 MIG 1g.10gb", MemoryMiB: 9856, Cores: 100, ShareLimit: 1, Health: gpuv1alpha1.GPUHealthy,
				MIG: &gpuv1alpha1.MIGInstance{ParentUUID: "GPU-p", Profile: "1g.10gb", GPUInstanceID: 9, ComputeInstanceID: 1, ComputePercent: 14,
					CapabilityProblem: "capability devices not found in /proc/driver/nvidia-caps/mig-minors: permission denied"}},
			{UUID: "GPU-c", Index: 2, Model: "A100", MemoryMiB: 81920, Cores: 100, ShareLimit: 7, Health: gpuv1alpha1.GPUHealthy,
				MIGGeometry: &gpuv1alpha1.MIGGeometry{Profiles: []gpuv1alpha1.MIGProfile{{Name: "1g.10gb", ProfileID: 19, MemoryMiB: 9856, ComputePercent: 14,
					Placements: []gpuv1alpha1.MIGPlacement{{Start: 0, Size: 1}, {Start: 1, Size: 1}}}}}},
		},
		Conditions: []metav1.Condition{{Type: gpuv1alpha1.GPUNodeReady, Status: metav1.ConditionTrue, Reason: ReasonRegistered,
			Message: "serving", LastTransitionTime: metav1.NewTime(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))}},
	}
	data, err := json.Marshal(statusApply("node", &want))
	if err != nil {
		t.Fatal(err)
	}
	var got gpuv1alpha1.GPUNode
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(got.Status, want) {
		t.Errorf("the apply carries\n%s\nwant every field of\n%+v", data, want)
	}
}

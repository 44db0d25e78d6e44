package nodestatus

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

func TestUpToDate(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	status := func() *gpuv1alpha1.GPUNodeStatus {
		return &gpuv1alpha1.GPUNodeStatus{
			DriverVersion: "simulated", GPUCount: 1, Models: "A100", MemoryMiB: 10240, AllocatableMemoryMiB: 10240,
			Devices: []gpuv1alpha1.GPUDevice{{UUID: "MIG-a", Model: "A100", MemoryMiB: 10240, Cores: 100, ShareLimit: 1, Health: gpuv1alpha1.GPUHealthy,
				MIG: &gpuv1alpha1.MIGInstance{ParentUUID: "GPU-a", Profile: "1g.10gb", ComputePercent: 14}}},
			Conditions: []metav1.Condition{{Type: gpuv1alpha1.GPUNodeReady, Status: metav1.ConditionTrue, Reason: ReasonRegistered, LastTransitionTime: since}},
		}
	}
	tests := []struct {
		name   string
		change func(current *gpuv1alpha1.GPUNodeStatus)
		want   bool
	}{
		{name: "the same status, MIG instance included, is up to date", change: func(*gpuv1alpha1.GPUNodeStatus) {}, want: true},
		{name: "another writer's field is not the plugin's to compare", change: func(c *gpuv1alpha1.GPUNodeStatus) {
			free := int64(1)
			c.FreeMemoryMiB = &free
		}, want: true},
		{name: "another condition is not the plugin's to compare", change: func(c *gpuv1alpha1.GPUNodeStatus) {
			c.Conditions = append(c.Conditions, metav1.Condition{Type: "Other", Status: metav1.ConditionFalse})
		}, want: true},
		{name: "a changed MIG profile", change: func(c *gpuv1alpha1.GPUNodeStatus) { c.Devices[0].MIG.Profile = "2g.20gb" }},
		{name: "an unhealthy GPU", change: func(c *gpuv1alpha1.GPUNodeStatus) { c.Devices[0].Health = gpuv1alpha1.GPUUnhealthy }},
		{name: "the stale mark", change: func(c *gpuv1alpha1.GPUNodeStatus) { c.Conditions[0].Status = metav1.ConditionUnknown }},
		{name: "another transition time", change: func(c *gpuv1alpha1.GPUNodeStatus) { c.Conditions[0].LastTransitionTime = metav1.Now() }},
		{name: "no Ready condition", change: func(c *gpuv1alpha1.GPUNodeStatus) { c.Conditions = nil }},
		{name: "another driver", change: func(c *gpuv1alpha1.GPUNodeStatus) { c.DriverVersion = "580.65" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			current := status()
			tc.change(current)
			if got := upToDate(current, status()); got != tc.want {
				t.Errorf("upToDate = %v, want %v", got, tc.want)
			}
		})
	}
}

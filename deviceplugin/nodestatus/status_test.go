package nodestatus

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

func TestScalingDevice(t *testing.T) {
	d := gpu.Device{UUID: "GPU-a", Index: 3, Model: "A100", MemoryMiB: 40960, NUMANode: 1, Health: gpu.Healthy()}
	tests := []struct {
		name    string
		scaling Scaling
		device  gpu.Device
		want    gpuv1alpha1.GPUDevice
	}{
		{
			name: "no scaling", scaling: Scaling{SplitCount: 10, MemoryScaling: 1, CoreScaling: 1}, device: d,
			want: gpuv1alpha1.GPUDevice{UUID: "GPU-a", Index: 3, Model: "A100", MemoryMiB: 40960, Cores: 100, ShareLimit: 10, NUMANode: 1, Health: gpuv1alpha1.GPUHealthy},
		},
		{
			name: "memory over-commit rounds down", scaling: Scaling{SplitCount: 4, MemoryScaling: 1.3, CoreScaling: 1}, device: d,
			want: gpuv1alpha1.GPUDevice{UUID: "GPU-a", Index: 3, Model: "A100", MemoryMiB: 53248, Cores: 100, ShareLimit: 4, NUMANode: 1, Health: gpuv1alpha1.GPUHealthy},
		},
		{
			name: "core scaling is 100 per GPU times the factor", scaling: Scaling{SplitCount: 1, MemoryScaling: 0.5, CoreScaling: 2.5}, device: d,
			want: gpuv1alpha1.GPUDevice{UUID: "GPU-a", Index: 3, Model: "A100", MemoryMiB: 20480, Cores: 250, ShareLimit: 1, NUMANode: 1, Health: gpuv1alpha1.GPUHealthy},
		},
		{
			name: "unhealthy with its reason, unknown NUMA node", scaling: Scaling{SplitCount: 1, MemoryScaling: 1, CoreScaling: 1},
			device: gpu.Device{UUID: "GPU-b", Model: "A30", MemoryMiB: 24576, NUMANode: -1, Health: gpu.Unhealthy("XID 79 critical error")},
			want:   gpuv1alpha1.GPUDevice{UUID: "GPU-b", Model: "A30", MemoryMiB: 24576, Cores: 100, ShareLimit: 1, NUMANode: -1, Health: gpuv1alpha1.GPUUnhealthy, HealthMessage: "XID 79 critical error"},
		},
		{
			name: "a MIG instance is published whole, one container at a time, unscaled", scaling: Scaling{SplitCount: 10, MemoryScaling: 2, CoreScaling: 3},
			device: gpu.Device{UUID: "MIG-a", Index: 2, Model: "A100 MIG 1g.10gb", MemoryMiB: 9856, NUMANode: 0, Health: gpu.Healthy(),
				MIG: &gpu.MIG{ParentUUID: "GPU-p", Profile: "1g.10gb", GPUInstanceID: 9, ComputeInstanceID: 0, ComputePercent: 14}},
			want: gpuv1alpha1.GPUDevice{UUID: "MIG-a", Index: 2, Model: "A100 MIG 1g.10gb", MemoryMiB: 9856, Cores: 100, ShareLimit: 1, Health: gpuv1alpha1.GPUHealthy,
				MIG: &gpuv1alpha1.MIGInstance{ParentUUID: "GPU-p", Profile: "1g.10gb", GPUInstanceID: 9, ComputePercent: 14}},
		},
		{
			name: "a MIG instance without its capability devices says which file and why", scaling: Scaling{SplitCount: 1, MemoryScaling: 1, CoreScaling: 1},
			device: gpu.Device{UUID: "MIG-b", Model: "A100 MIG 1g.10gb", MemoryMiB: 9856, Health: gpu.Healthy(),
				MIG: &gpu.MIG{ParentUUID: "GPU-p", Profile: "1g.10gb", CapsProblem: &gpu.CapsProblem{File: "/proc/driver/nvidia-caps/mig-minors", Reason: "permission denied"}}},
			want: gpuv1alpha1.GPUDevice{UUID: "MIG-b", Model: "A100 MIG 1g.10gb", MemoryMiB: 9856, Cores: 100, ShareLimit: 1, Health: gpuv1alpha1.GPUHealthy,
				MIG: &gpuv1alpha1.MIGInstance{ParentUUID: "GPU-p", Profile: "1g.10gb",
					CapabilityProblem: "capability devices not found in /proc/driver/nvidia-caps/mig-minors: permission denied; a container given this instance through CDI cannot open it"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.scaling.Device(tt.device); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Device =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	devices := []gpuv1alpha1.GPUDevice{
		{UUID: "a", Model: "A100", MemoryMiB: 100, Health: gpuv1alpha1.GPUHealthy},
		{UUID: "b", Model: "A100", MemoryMiB: 100, Health: gpuv1alpha1.GPUUnhealthy},
		{UUID: "c", Model: "H100", MemoryMiB: 200, Health: gpuv1alpha1.GPUHealthy},
	}
	tests := []struct {
		name     string
		cordoned []string
		want     Summary
	}{
		{name: "unhealthy GPUs are not allocatable", want: Summary{GPUCount: 3, Models: "A100,H100", MemoryMiB: 400, AllocatableMemoryMiB: 300}},
		{name: "cordoned GPUs are not allocatable", cordoned: []string{"c", "unknown"}, want: Summary{GPUCount: 3, Models: "A100,H100", MemoryMiB: 400, AllocatableMemoryMiB: 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Summarize(devices, tt.cordoned); got != tt.want {
				t.Errorf("Summarize = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestReadyConditionKeepsTransitionTime(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Hour))
	ready := Readiness{Ready: true, Reason: ReasonRegistered, Message: "m"}
	tests := []struct {
		name     string
		previous *metav1.Condition
		r        Readiness
		want     metav1.Time
	}{
		{name: "first condition", r: ready, want: t1},
		{name: "same status keeps the time", previous: &metav1.Condition{Status: metav1.ConditionTrue, LastTransitionTime: t0}, r: ready, want: t0},
		{name: "new reason, same status keeps the time", previous: &metav1.Condition{Status: metav1.ConditionTrue, Reason: "Other", LastTransitionTime: t0}, r: ready, want: t0},
		{name: "status change moves the time", previous: &metav1.Condition{Status: metav1.ConditionFalse, LastTransitionTime: t0}, r: ready, want: t1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.r.condition(gpuv1alpha1.GPUNodeReady, tt.previous, t1)
			if !reflect.DeepEqual(c.LastTransitionTime, tt.want) || c.Type != "Ready" || c.Reason != tt.r.Reason {
				t.Errorf("condition %+v, want transition at %v", c, tt.want)
			}
		})
	}
}

func TestFreeMemoryMiB(t *testing.T) {
	devices := []gpuv1alpha1.GPUDevice{
		{UUID: "a", MemoryMiB: 1000, Health: gpuv1alpha1.GPUHealthy},
		{UUID: "b", MemoryMiB: 1000, Health: gpuv1alpha1.GPUHealthy},
		{UUID: "sick", MemoryMiB: 1000, Health: gpuv1alpha1.GPUUnhealthy},
		{UUID: "cordoned", MemoryMiB: 1000, Health: gpuv1alpha1.GPUHealthy},
	}
	tests := []struct {
		name      string
		allocated map[string]int64
		want      int64
	}{
		{name: "nothing allocated: the healthy, uncordoned GPUs", want: 2000},
		{name: "allocations are taken off their GPU", allocated: map[string]int64{"a": 300, "b": 1000}, want: 700},
		{name: "a GPU allocated past its memory counts as full, not below", allocated: map[string]int64{"a": 1500}, want: 1000},
		{name: "allocations on GPUs not offered change nothing", allocated: map[string]int64{"sick": 500, "cordoned": 500}, want: 2000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FreeMemoryMiB(devices, []string{"cordoned"}, tt.allocated); got != tt.want {
				t.Errorf("FreeMemoryMiB = %d, want %d", got, tt.want)
			}
		})
	}
}

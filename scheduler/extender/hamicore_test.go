package extender

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/metrics"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// withoutHAMiCore marks a100-2 as its device plugin does when the HAMi-core
// library it is configured with is not on the node.
func withoutHAMiCore(f *fixture) {
	gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: "a100-2"}}
	for i := range 2 {
		gn.Status.Devices = append(gn.Status.Devices, gpuv1alpha1.GPUDevice{
			UUID: "a100-2-gpu" + itoa(i), Index: int32(i), Model: "NVIDIA A100-SXM4-80GB",
			MemoryMiB: 80000, Cores: 100, ShareLimit: 4, Health: gpuv1alpha1.GPUHealthy,
		})
	}
	gn.Status.Conditions = []metav1.Condition{
		{Type: gpuv1alpha1.GPUNodeReady, Status: metav1.ConditionTrue, Reason: "Registered"},
		{Type: gpuv1alpha1.GPUNodeHAMiCoreReady, Status: metav1.ConditionFalse, Reason: gpuv1alpha1.HAMiCoreLibraryMissing,
			Message: "the HAMi-core library /usr/local/vgpu/libvgpu.so is not on the node"},
	}
	f.view.SetGPUNode(gn)
	f.view.SetLease(gn.Name, epoch)
}

func itoa(i int) string { return string(rune('0' + i)) }

func TestPodsAskingForSlicesOnANodeWithoutHAMiCore(t *testing.T) {
	names := []string{"a100-1", "a100-2"}
	slice := []string{"nvidia.com/gpu=1", "nvidia.com/gpumem=10000", "nvidia.com/gpucores=30"}
	tests := []struct {
		name         string
		policy       view.HAMiCorePolicy
		resources    []string
		wantFeasible []string
		wantRefusal  bool
		wantWarning  bool
	}{
		{name: "refused by default, with the reason", resources: slice, wantFeasible: []string{"a100-1"}, wantRefusal: true},
		{name: "refused when asked", policy: view.HAMiCoreRefuse, resources: slice, wantFeasible: []string{"a100-1"}, wantRefusal: true},
		{name: "placed with a warning when asked", policy: view.HAMiCoreWarn, resources: slice, wantFeasible: names, wantWarning: true},
		{name: "a whole GPU needs no library", resources: []string{"nvidia.com/gpu=1"}, wantFeasible: names},
		{name: "all of a GPU's compute needs no library", resources: []string{"nvidia.com/gpu=1", "nvidia.com/gpucores=100"}, wantFeasible: names},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.ext.HAMiCoreMissing = tt.policy
			withoutHAMiCore(f)
			pod := f.addPod(podSpec("p", nil, tt.resources...))
			result, _ := f.filter(&extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names})
			if !slices.Equal(*result.NodeNames, tt.wantFeasible) {
				t.Errorf("feasible %v, want %v (failed %v, unresolvable %v)", *result.NodeNames, tt.wantFeasible, result.FailedNodes, result.FailedAndUnresolvableNodes)
			}
			reason := result.FailedAndUnresolvableNodes["a100-2"]
			if tt.wantRefusal != strings.Contains(reason, "HAMi-core is missing") || (tt.wantRefusal && !strings.Contains(reason, "/usr/local/vgpu/libvgpu.so")) {
				t.Errorf("a100-2's reason %q, refusal wanted: %v", reason, tt.wantRefusal)
			}

			outcome, err := f.ext.Bind(t.Context(), bindArgs(pod, "a100-2"))
			if tt.wantRefusal {
				if err == nil || !strings.Contains(err.Error(), "HAMi-core is missing") {
					t.Errorf("Bind = %s, %v; want the refusal", outcome, err)
				}
				return
			}
			if err != nil || outcome != metrics.ResultSuccess {
				t.Fatalf("Bind = %s, %v", outcome, err)
			}
			events := f.events()
			warned := len(events) == 1 && strings.Contains(events[0], view.ReasonLimitsNotEnforced) && strings.Contains(events[0], "libvgpu.so")
			if warned != tt.wantWarning {
				t.Errorf("events %v, warning wanted: %v", events, tt.wantWarning)
			}
		})
	}
}

package admission

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestValidateWarnsOfQuotasThatCountNothing(t *testing.T) {
	quota := func(name string, hard ...string) *corev1.ResourceQuota {
		q := gpuQuota(name)
		q.Spec.Hard = resources(hard...)
		return q
	}
	tests := []struct {
		name    string
		objects []runtime.Object
		want    []string
	}{
		{
			name:    "Tessera's totals under requests. count: no warning",
			objects: []runtime.Object{quota("gpu", "requests."+quotaMemory, "40000", "requests."+quotaGPUs, "4", "requests.nvidia.com/gpu", "4")},
		},
		{
			name: "a total without requests. counts nothing, under limits. neither",
			objects: []runtime.Object{
				quota("gpu", quotaMemory, "40000"),
				quota("caps", "limits."+quotaCores, "400"),
			},
			want: []string{
				"ResourceQuota caps limits limits.gpu.tessera.dev/cores, which Kubernetes never counts: write requests.gpu.tessera.dev/cores",
				"ResourceQuota gpu limits gpu.tessera.dev/memory, which Kubernetes never counts: write requests.gpu.tessera.dev/memory",
			},
		},
		{
			name:    "a per-GPU resource counts a container once",
			objects: []runtime.Object{quota("hami", "requests.nvidia.com/gpucores", "400", "requests.nvidia.com/gpumem", "40000")},
			want: []string{
				"ResourceQuota hami limits requests.nvidia.com/gpucores, which counts a container once, not per GPU: Tessera's total is requests.gpu.tessera.dev/cores",
				"ResourceQuota hami limits requests.nvidia.com/gpumem, which counts a container once, not per GPU: Tessera's total is requests.gpu.tessera.dev/memory",
			},
		},
		{
			name: "in DRA mode pods carry no totals: no warning",
			objects: []runtime.Object{
				namespace(testNamespace, map[string]string{DefaultModeLabel: ModeDRA}),
				quota("gpu", quotaMemory, "40000"),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkWarnings(t, newAdmitter(t, DefaultConfig(), append(tc.objects, gpuNode("a", 100, 81920, 81920))...), twoBy10000(), tc.want)
		})
	}
}

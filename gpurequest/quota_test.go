package gpurequest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

func TestQuotaTotals(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	tests := []struct {
		name       string
		containers []corev1.Container
		inits      []corev1.Container
		// want is the totals of each container asking for GPUs, init
		// containers first.
		want []QuotaTotals
	}{{
		name:       "memory per GPU is summed over the GPUs: 2 x 10000 MiB is 20000",
		containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpu", "2", "nvidia.com/gpumem", "10000")}},
		want:       []QuotaTotals{{GPUs: 2, MemoryMiB: 20000}},
	}, {
		name:       "cores per GPU are summed over the GPUs",
		containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpu", "3", "nvidia.com/gpumem", "1000", "nvidia.com/gpucores", "30")}},
		want:       []QuotaTotals{{GPUs: 3, Cores: 90, MemoryMiB: 3000}},
	}, {
		name:       "a percentage has no memory until a GPU is chosen",
		containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpu", "2", "nvidia.com/gpumem-percentage", "50", "nvidia.com/gpucores", "20")}},
		want:       []QuotaTotals{{GPUs: 2, Cores: 40}},
	}, {
		name:       "exclusive use counts 100 per GPU",
		containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpu", "2", "nvidia.com/gpumem", "4000", "nvidia.com/gpucores", "100")}},
		want:       []QuotaTotals{{GPUs: 2, Cores: 200, MemoryMiB: 8000}},
	}, {
		name:       "a whole GPU counts 100 per GPU and no memory until a GPU is chosen",
		containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpu", "4")}},
		want:       []QuotaTotals{{GPUs: 4, Cores: 400}},
	}, {
		// HAMi reads gpucores: 0 as no cores at all.
		name:       "a count with zero cores is a whole GPU",
		containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpu", "1", "nvidia.com/gpucores", "0")}},
		want:       []QuotaTotals{{GPUs: 1, Cores: 100}},
	}, {
		name:       "a GPU's whole memory with some cores counts those cores",
		containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpu", "1", "nvidia.com/gpucores", "30")}},
		want:       []QuotaTotals{{GPUs: 1, Cores: 30}},
	}, {
		name:       "memory alone shares the compute and counts none",
		containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "4000")}},
		want:       []QuotaTotals{{GPUs: 1, MemoryMiB: 4000}},
	}, {
		name: "init and sidecar containers have totals of their own",
		inits: []corev1.Container{
			{Name: "warmup", Resources: limits("nvidia.com/gpu", "2", "nvidia.com/gpumem", "10000")},
			{Name: "proxy", RestartPolicy: &always, Resources: limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000", "nvidia.com/gpucores", "10")},
		},
		containers: []corev1.Container{
			{Name: "cpu-only", Resources: limits("cpu", "1")},
			{Name: "main", Resources: limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "8000")},
		},
		want: []QuotaTotals{{GPUs: 2, MemoryMiB: 20000}, {GPUs: 1, Cores: 10, MemoryMiB: 1000}, {GPUs: 1, MemoryMiB: 8000}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: tc.inits, Containers: tc.containers}}
			requests, err := PodRequests(pod, DefaultResourceNames())
			if err != nil {
				t.Fatal(err)
			}
			var got []QuotaTotals
			for _, r := range requests {
				got = append(got, r.QuotaTotals())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("totals differ (-want +got):\n%s", diff)
			}
		})
	}
}

func TestQuotaTotalsResourceList(t *testing.T) {
	tests := []struct {
		name   string
		totals QuotaTotals
		want   corev1.ResourceList
	}{{
		name:   "every total under its name",
		totals: QuotaTotals{GPUs: 2, Cores: 60, MemoryMiB: 20000},
		want: corev1.ResourceList{
			gpuv1alpha1.QuotaGPUs: resource.MustParse("2"), gpuv1alpha1.QuotaCores: resource.MustParse("60"),
			gpuv1alpha1.QuotaMemory: resource.MustParse("20000"),
		},
	}, {
		name:   "memory not known and no cores are left out",
		totals: QuotaTotals{GPUs: 1},
		want:   corev1.ResourceList{gpuv1alpha1.QuotaGPUs: resource.MustParse("1")},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.totals.ResourceList()
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for name, q := range tc.want {
				if g, ok := got[name]; !ok || g.Cmp(q) != 0 || g.String() != q.String() {
					t.Errorf("%s = %v, want %v", name, got[name], q.String())
				}
			}
		})
	}
}

func TestQuotaExcessNamesEverything(t *testing.T) {
	msg := QuotaExcess{Namespace: "team-a", Quota: "gpu", Resource: gpuv1alpha1.QuotaMemory, Used: 30000, Asked: 20000, Limit: 40000}.String()
	for _, want := range []string{"namespace team-a", "ResourceQuota gpu", "requests.gpu.tessera.dev/memory", "GPU memory in MiB",
		"used 30000", "asked 20000", "limit 40000"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
}

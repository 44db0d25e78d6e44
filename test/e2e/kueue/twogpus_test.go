package kueue

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

// testTwoGPUs runs after borrowing and reclaim, team-a holding 2 of its 4
// GPUs (40000 MiB, 60% of a GPU's compute): a Job of one pod of 2 GPUs x
// 20000 MiB, written per GPU only, is counted by Kueue as 40000 MiB, the
// totals Tessera's webhook wrote into its template, and placed.
func testTwoGPUs(ctx context.Context, t *testing.T, e *env, node string) {
	s := slice{gpus: 2, memoryMiB: 20000, cores: 25}
	job := e.submit(ctx, t, gpuJob("team-a", "pair", 1, s))
	e.waitAdmitted(t, job, "team-a")
	framework.WaitFor(t, 30*time.Second, "Kueue's Workload to count the Job's totals", func() (bool, string) {
		sets, _, _ := unstructured.NestedSlice(e.workload(ctx, t, job).Object, "status", "admission", "podSetAssignments")
		if len(sets) != 1 {
			return false, fmt.Sprintf("%d pod set assignments", len(sets))
		}
		usage, _, _ := unstructured.NestedStringMap(sets[0].(map[string]any), "resourceUsage")
		for name, total := range s.totals() {
			if q, err := resource.ParseQuantity(usage[string(name)]); err != nil || q.Value() != total {
				return false, fmt.Sprintf("resourceUsage %v, want %v", usage, s.totals())
			}
		}
		return true, ""
	})
	e.waitPlaced(ctx, t, job, node, 1)
	e.waitUsage(t, "team-a", map[corev1.ResourceName]int64{
		gpuv1alpha1.QuotaGPUs: 4, gpuv1alpha1.QuotaMemory: 80000, gpuv1alpha1.QuotaCores: 110,
	})
}

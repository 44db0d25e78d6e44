package scheduler

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

// TestGPUQuotaWaits runs, in extender mode and in plugin mode, pods that
// admission cannot count against their namespace's GPU memory quota: a
// percentage of memory has no MiB until the scheduler chooses its GPU,
// and these pods pass no webhook. A pod whose share of an A100 is more
// than the quota leaves stays Pending, its FailedScheduling event naming
// the namespace, what is used, what was asked and the limit; it is placed
// once the quota is raised, and another once a pod of the namespace is
// deleted. The scheduler's state metrics show what the namespace uses and
// its limit.
func TestGPUQuotaWaits(t *testing.T) {
	inBothModes(t, testGPUQuotaWaits)
}

func testGPUQuotaWaits(t *testing.T, e *env) {
	ctx := t.Context()
	const group = "quota-wait"
	e.addNode(ctx, t, "quota-wait-1", group, 10, a100(0), a100(0))
	createGPUQuota(ctx, t, e.cp, "gpu", "50000", "100")

	e.createPod(ctx, t, gpuPod("first", group, nil, ctr{name: "main", count: 1, memory: 30000}))
	e.waitBound(ctx, t, "first")
	// Half of an 80 GiB A100 is 40960 MiB: 30000 + 40960 is over 50000.
	e.createPod(ctx, t, gpuPod("half", group, nil, ctr{name: "main", count: 1, pct: 50}))
	e.waitFailedScheduling(ctx, t, "half", quotaExcess(30000, 40960, 50000))
	e.waitNamespaceState(t, "used", 30000)
	e.waitNamespaceState(t, "hard", 50000)

	setQuotaMemory(ctx, t, e.cp, "gpu", "90000")
	e.waitBound(ctx, t, "half")
	e.waitNamespaceState(t, "used", 70960)

	e.createPod(ctx, t, gpuPod("half-again", group, nil, ctr{name: "main", count: 1, pct: 50}))
	e.waitFailedScheduling(ctx, t, "half-again", quotaExcess(70960, 40960, 90000))
	e.deletePod(ctx, t, "first")
	e.waitBound(ctx, t, "half-again")
	e.waitNamespaceState(t, "used", 81920)

	for _, name := range []string{"half", "half-again"} {
		e.deletePod(ctx, t, name)
	}
	e.checkNoOvercommit(ctx, t)
}

// quotaExcess is the scheduler's words for a pod of namespace default over
// the memory limit of ResourceQuota gpu.
func quotaExcess(used, asked, limit int64) string {
	return "namespace default would exceed its GPU quota (ResourceQuota gpu) on requests." + string(gpuv1alpha1.QuotaMemory) +
		" (GPU memory in MiB): used " + strconv.FormatInt(used, 10) + ", asked " + strconv.FormatInt(asked, 10) + ", limit " + strconv.FormatInt(limit, 10)
}

// setQuotaMemory sets the GPU memory limit of the pods' namespace's
// ResourceQuota, and waits until the resourcequota controller has
// counted it, as ResourceQuota's admission reads it.
func setQuotaMemory(ctx context.Context, t *testing.T, cp *framework.ControlPlane, name, memoryMiB string) {
	t.Helper()
	q, err := cp.Kube.CoreV1().ResourceQuotas(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Spec.Hard["requests."+gpuv1alpha1.QuotaMemory] = resource.MustParse(memoryMiB)
	if _, err := cp.Kube.CoreV1().ResourceQuotas(namespace).Update(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("setting ResourceQuota %s's GPU memory: %v", name, err)
	}
	framework.WaitFor(t, 30*time.Second, "the resourcequota controller to count ResourceQuota "+name+"'s new limit", func() (bool, string) {
		q, err := cp.Kube.CoreV1().ResourceQuotas(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		hard := q.Status.Hard["requests."+gpuv1alpha1.QuotaMemory]
		return hard.Cmp(resource.MustParse(memoryMiB)) == 0, "status.hard: " + framework.ResourceListString(q.Status.Hard)
	})
}

// waitNamespaceState waits until the state metrics of what places pods say
// the namespace's GPU memory series of kind (used or hard) is mib MiB.
func (e *env) waitNamespaceState(t *testing.T, kind string, mib int64) {
	t.Helper()
	addr := ""
	for _, mode := range metricsModes() {
		if mode.plugin == (e.scheduler != nil) {
			addr = mode.address(e)
		}
	}
	want := "tessera_namespace_gpu_memory_" + kind + `_bytes{namespace="` + namespace + `"} ` + strconv.FormatFloat(float64(mib)*(1<<20), 'g', -1, 64) + "\n"
	framework.WaitFor(t, 30*time.Second, "the state metrics to say "+strings.TrimSpace(want), func() (bool, string) {
		body, err := httpGet("http://" + addr + "/metrics/state")
		if err != nil {
			return false, err.Error()
		}
		var lines []string
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "tessera_namespace_") {
				lines = append(lines, line)
			}
		}
		return strings.Contains(body, want), strings.Join(lines, "; ")
	})
}

package scheduler

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// TestGPUQuotaLowered lowers, in extender mode and in plugin mode, a
// namespace's GPU memory quota below what its pods hold: nothing running
// is evicted; a new pod asking for memory in MiB is refused by the
// webhook, and one whose memory is known only once its GPU is chosen (a
// percentage) waits Pending, each naming the namespace, what is used,
// what was asked and the new limit; the waiting pod is placed once the
// running pods are gone.
func TestGPUQuotaLowered(t *testing.T) {
	inBothModes(t, testGPUQuotaLowered)
}

func testGPUQuotaLowered(t *testing.T, e *env) {
	ctx := t.Context()
	e.cp.StartWebhook(t, nil)
	const group = "quota-lowered"
	e.addNode(ctx, t, "quota-lowered-1", group, 10, a100(0), a100(0))
	createGPUQuota(ctx, t, e.cp, "gpu", "60000", "4")
	running := []string{"running-1", "running-2"}
	for _, name := range running {
		e.createPod(ctx, t, gpuPod(name, group, nil, ctr{name: "main", count: 1, memory: 20000}))
		e.waitBound(ctx, t, name)
	}
	waitQuotaUsed(ctx, t, e.cp, "gpu", map[corev1.ResourceName]int64{gpuv1alpha1.QuotaMemory: 40000})

	setQuotaMemory(ctx, t, e.cp, "gpu", "10000")
	e.waitNamespaceState(t, "hard", 10000)
	_, err := e.cp.Kube.CoreV1().Pods(namespace).Create(ctx, gpuPod("in-mib", group, nil, ctr{name: "main", count: 1, memory: 1000}), metav1.CreateOptions{})
	if want := quotaExcess(40000, 1000, 10000); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("creating a pod in MiB under the lowered quota: %v; want refused saying %q", err, want)
	}
	// A tenth of an 80 GiB A100 is 8192 MiB.
	e.createPod(ctx, t, gpuPod("tenth", group, nil, ctr{name: "main", count: 1, pct: 10}))
	e.waitFailedScheduling(ctx, t, "tenth", quotaExcess(40000, 8192, 10000))
	for _, name := range running {
		pod, alloc := e.waitBound(ctx, t, name)
		if pod.DeletionTimestamp != nil || alloc.DeletionTimestamp != nil {
			t.Errorf("pod %s is being deleted under the lowered quota; want it left running", name)
		}
	}

	for _, name := range running {
		e.deletePod(ctx, t, name)
	}
	e.waitBound(ctx, t, "tenth")
	e.deletePod(ctx, t, "tenth")
	e.checkNoOvercommit(ctx, t)
}

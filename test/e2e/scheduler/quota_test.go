package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/webhook/admission"
)

// TestGPUQuota runs the admission webhook in front of extender mode and
// of plugin mode, with a ResourceQuota on the GPU quota's totals in the
// pods' namespace: a pod of 2 GPUs x 10000 MiB is counted as 20000 MiB, a
// pod over the quota is refused with a message that names the namespace,
// what is used, what was asked and the limit, and pods that fit are still
// placed and bound, the totals the webhook writes ignored by
// kube-scheduler's resource fit; pods that skip the webhook or name
// another scheduler do not get past the quota (testQuotaPastWebhook).
func TestGPUQuota(t *testing.T) {
	inBothModes(t, testGPUQuota)
}

func testGPUQuota(t *testing.T, e *env) {
	ctx := t.Context()
	e.cp.StartWebhook(t, nil)
	const group = "quota"
	e.addNode(ctx, t, "quota-1", group, 10, a100(0), a100(0), a100(0))
	createGPUQuota(ctx, t, e.cp, "gpu", "40000", "4")

	e.createPod(ctx, t, gpuPod("two-by-10000", group, nil, ctr{name: "main", count: 2, memory: 10000}))
	pod, _ := e.waitBound(ctx, t, "two-by-10000")
	for _, list := range []corev1.ResourceList{pod.Spec.Containers[0].Resources.Requests, pod.Spec.Containers[0].Resources.Limits} {
		if q := list[gpuv1alpha1.QuotaMemory]; q.Value() != 20000 {
			t.Errorf("the pod carries %s %s, want 20000 in requests and limits: %v", gpuv1alpha1.QuotaMemory, q.String(), list)
		}
	}
	waitQuotaUsed(ctx, t, e.cp, "gpu", map[corev1.ResourceName]int64{gpuv1alpha1.QuotaMemory: 20000, gpuv1alpha1.QuotaGPUs: 2})

	_, err := e.cp.Kube.CoreV1().Pods(namespace).Create(ctx, gpuPod("over-quota", group, nil, ctr{name: "main", count: 2, memory: 12000}), metav1.CreateOptions{})
	want := "namespace default would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/memory (GPU memory in MiB): used 20000, asked 24000, limit 40000"
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("creating a pod over the quota: %v; want refused saying %q", err, want)
	}

	// Filling the quota exactly is allowed, and placed.
	e.createPod(ctx, t, gpuPod("fills-quota", group, nil, ctr{name: "main", count: 1, memory: 20000}))
	e.waitBound(ctx, t, "fills-quota")
	waitQuotaUsed(ctx, t, e.cp, "gpu", map[corev1.ResourceName]int64{gpuv1alpha1.QuotaMemory: 40000, gpuv1alpha1.QuotaGPUs: 3})

	// A percentage has no MiB at admission: it is admitted on its count,
	// and its memory is the scheduler's to count.
	pct, err := e.cp.Kube.CoreV1().Pods(namespace).Create(ctx, gpuPod("percentage", group, nil, ctr{name: "main", count: 1, pct: 10}), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a pod with a percentage in a namespace whose memory quota is full: %v", err)
	}
	if _, ok := pct.Spec.Containers[0].Resources.Requests[gpuv1alpha1.QuotaMemory]; ok {
		t.Errorf("a percentage carries %s, want none until a GPU is chosen", gpuv1alpha1.QuotaMemory)
	}

	// ResourceQuota's own admission is the wall, for pods the webhook does
	// not see too.
	optedOut := gpuPod("opted-out", group, nil, ctr{name: "main", count: 1, memory: 1000})
	optedOut.Labels = map[string]string{admission.DefaultOptOutLabel: admission.DefaultOptOutValue}
	optedOut.Spec.Containers[0].Resources.Limits[gpuv1alpha1.QuotaMemory] = resource.MustParse("1000")
	_, err = e.cp.Kube.CoreV1().Pods(namespace).Create(ctx, optedOut, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota: gpu") {
		t.Errorf("creating a pod past the webhook over the quota: %v; want ResourceQuota's refusal", err)
	}
	testQuotaPastWebhook(ctx, t, e, group)
	for _, name := range []string{"two-by-10000", "fills-quota", "percentage", "opted-out-no-totals"} {
		e.deletePod(ctx, t, name)
	}
	e.checkNoOvercommit(ctx, t)
}

// testQuotaPastWebhook runs once the namespace's GPU memory quota is
// full: a pod labelled to skip the webhook carries no totals, so
// ResourceQuota does not count it, and Tessera's scheduler, which counts
// what it allocates, holds it Pending, saying why; a pod that names
// another scheduler keeps it, gets its totals from the webhook all the
// same and is refused for the quota.
func testQuotaPastWebhook(ctx context.Context, t *testing.T, e *env, group string) {
	optedOut := gpuPod("opted-out-no-totals", group, nil, ctr{name: "main", count: 1, memory: 1000})
	optedOut.Labels = map[string]string{admission.DefaultOptOutLabel: admission.DefaultOptOutValue}
	created := e.createPod(ctx, t, optedOut)
	if _, ok := created.Spec.Containers[0].Resources.Limits[gpuv1alpha1.QuotaMemory]; ok {
		t.Fatalf("an opted-out pod got %s: the webhook saw it", gpuv1alpha1.QuotaMemory)
	}
	e.waitFailedScheduling(ctx, t, "opted-out-no-totals", quotaExcess(40000, 1000, 40000))

	other := gpuPod("other-scheduler", group, nil, ctr{name: "main", count: 1, memory: 1000})
	other.Spec.SchedulerName = "other-scheduler"
	_, err := e.cp.Kube.CoreV1().Pods(namespace).Create(ctx, other, metav1.CreateOptions{})
	if want := quotaExcess(40000, 1000, 40000); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("creating a pod for another scheduler over the quota: %v; want refused saying %q", err, want)
	}
}

// createGPUQuota creates a ResourceQuota on the GPU memory and count in the
// pods' namespace, and waits until the resourcequota controller has
// counted it.
func createGPUQuota(ctx context.Context, t *testing.T, cp *framework.ControlPlane, name, memoryMiB, gpus string) {
	t.Helper()
	cp.CreateResourceQuota(ctx, t, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			"requests." + gpuv1alpha1.QuotaMemory: resource.MustParse(memoryMiB),
			"requests." + gpuv1alpha1.QuotaGPUs:   resource.MustParse(gpus),
		}},
	})
}

// waitQuotaUsed waits until the quota's status.used says want, keyed by
// the quota resource without its requests. prefix.
func waitQuotaUsed(ctx context.Context, t *testing.T, cp *framework.ControlPlane, name string, want map[corev1.ResourceName]int64) {
	t.Helper()
	framework.WaitFor(t, 30*time.Second, "ResourceQuota "+name+" to count the pods", func() (bool, string) {
		q, err := cp.Kube.CoreV1().ResourceQuotas(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for r, v := range want {
			if used := q.Status.Used["requests."+r]; used.Value() != v {
				return false, "status.used: " + framework.ResourceListString(q.Status.Used)
			}
		}
		return true, ""
	})
}

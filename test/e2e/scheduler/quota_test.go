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
// kube-scheduler's resource fit.
func TestGPUQuota(t *testing.T) {
	for name, start := range map[string]func(*testing.T) *env{"extender": startEnv, "plugin": startPluginEnv} {
		t.Run(name, func(t *testing.T) { testGPUQuota(t, start(t)) })
	}
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
	for _, name := range []string{"two-by-10000", "fills-quota", "percentage"} {
		e.deletePod(ctx, t, name)
	}
	e.checkNoOvercommit(ctx, t)
}

// createGPUQuota creates a ResourceQuota on the GPU memory and count in the
// pods' namespace. The control plane runs no resourcequota controller, so
// its status is written here as that controller would first write it;
// ResourceQuota's admission then keeps status.used as pods are created.
func createGPUQuota(ctx context.Context, t *testing.T, cp *framework.ControlPlane, name, memoryMiB, gpus string) {
	t.Helper()
	hard := corev1.ResourceList{
		"requests." + gpuv1alpha1.QuotaMemory: resource.MustParse(memoryMiB),
		"requests." + gpuv1alpha1.QuotaGPUs:   resource.MustParse(gpus),
	}
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	q, err := cp.Kube.CoreV1().ResourceQuotas(namespace).Create(ctx, q, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating ResourceQuota %s: %v", name, err)
	}
	q.Status.Hard = hard
	q.Status.Used = corev1.ResourceList{}
	for r := range hard {
		q.Status.Used[r] = resource.MustParse("0")
	}
	if _, err := cp.Kube.CoreV1().ResourceQuotas(namespace).UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing ResourceQuota %s's status: %v", name, err)
	}
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
				return false, "status.used: " + resourceListString(q.Status.Used)
			}
		}
		return true, ""
	})
}

func resourceListString(l corev1.ResourceList) string {
	var parts []string
	for r, q := range l {
		parts = append(parts, string(r)+"="+q.String())
	}
	return strings.Join(parts, ", ")
}

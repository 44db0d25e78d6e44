package scheduler

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/webhook/admission"
)

// TestGPUQuotaNonsense writes GPU quotas with values that make no sense,
// with the webhook in front of extender mode. The API server refuses a
// negative limit, naming the field and the bound, and one that is not a
// number. It takes a limit between whole numbers (1.5 GPUs) and one
// beyond any GPU memory (1e30 MiB): the webhook and the scheduler read
// the first as the whole number below it and the second as no limit, so
// one GPU is admitted and placed, and a second is refused by the webhook
// or, past it, held Pending by the scheduler, both saying limit 1. A
// quota on Tessera's memory total without the requests. prefix, which
// Kubernetes never counts, limits nothing, and the webhook warns of it.
func TestGPUQuotaNonsense(t *testing.T) {
	e := startEnv(t)
	ctx := t.Context()
	e.cp.StartWebhook(t, nil)
	const group = "quota-nonsense"
	e.addNode(ctx, t, "quota-nonsense-1", group, 10, a100(0), a100(0))
	quotas := e.cp.Kube.CoreV1().ResourceQuotas(namespace)

	negative := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "negative", Namespace: namespace},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests." + gpuv1alpha1.QuotaMemory: resource.MustParse("-1")}},
	}
	_, err := quotas.Create(ctx, negative, metav1.CreateOptions{})
	if want := "spec.hard[requests.gpu.tessera.dev/memory]: Invalid value: \"-1\": must be greater than or equal to 0"; !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("creating a quota of -1 MiB: %v; want refused saying %q", err, want)
	}
	notANumber := `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"not-a-number"},"spec":{"hard":{"requests.gpu.tessera.dev/cores":"lots"}}}`
	err = e.cp.Kube.CoreV1().RESTClient().Post().Namespace(namespace).Resource("resourcequotas").Body([]byte(notANumber)).Do(ctx).Error()
	if want := "quantities must match the regular expression"; !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("creating a quota of %q cores: %v; want refused saying %q", "lots", err, want)
	}

	e.cp.CreateResourceQuota(ctx, t, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: namespace},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			"requests." + gpuv1alpha1.QuotaGPUs:   resource.MustParse("1.5"),
			"requests." + gpuv1alpha1.QuotaMemory: resource.MustParse("1e30"),
		}},
	})
	e.cp.CreateResourceQuota(ctx, t, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "no-prefix", Namespace: namespace},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{gpuv1alpha1.QuotaMemory: resource.MustParse("1")}},
	})
	kube, warnings := e.cp.ClientWithWarnings(t)
	if _, err := kube.CoreV1().Pods(namespace).Create(ctx, gpuPod("first", group, nil, ctr{name: "main", count: 1, memory: 40000}), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod first: %v", err)
	}
	want := []string{"ResourceQuota no-prefix limits gpu.tessera.dev/memory, which Kubernetes never counts: write requests.gpu.tessera.dev/memory"}
	if got := warnings.Take(); !slices.Equal(got, want) {
		t.Errorf("warnings creating a pod under a quota without requests.: %q, want %q", got, want)
	}
	e.waitBound(ctx, t, "first")
	waitQuotaUsed(ctx, t, e.cp, "gpu", map[corev1.ResourceName]int64{gpuv1alpha1.QuotaGPUs: 1, gpuv1alpha1.QuotaMemory: 40000})

	const overOne = "namespace default would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/gpus (GPUs): used 1, asked 1, limit 1"
	_, err = e.cp.Kube.CoreV1().Pods(namespace).Create(ctx, gpuPod("second", group, nil, ctr{name: "main", count: 1, memory: 1000}), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), overOne) {
		t.Errorf("creating a second pod of one GPU under a quota of 1.5: %v; want refused saying %q", err, overOne)
	}
	optedOut := gpuPod("opted-out", group, nil, ctr{name: "main", count: 1, memory: 1000})
	optedOut.Labels = map[string]string{admission.DefaultOptOutLabel: admission.DefaultOptOutValue}
	e.createPod(ctx, t, optedOut)
	e.waitFailedScheduling(ctx, t, "opted-out", overOne)

	e.deletePod(ctx, t, "first")
	e.waitBound(ctx, t, "opted-out")
	e.deletePod(ctx, t, "opted-out")
	e.checkNoOvercommit(ctx, t)
}

package scheduler

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/webhook/admission"
)

// TestGPUQuotaWantsCompute runs the admission webhook in front of
// extender mode and of plugin mode, with a ResourceQuota on GPU compute in
// the pods' namespace: a GPU slice that states no compute is refused at
// admission, naming the container, the resource to state and the quota,
// as kube-apiserver refuses a pod that states no CPU under a quota on CPU;
// one that skipped the webhook is held Pending by the scheduler in the
// same words; a slice that states its compute is placed.
func TestGPUQuotaWantsCompute(t *testing.T) {
	inBothModes(t, testGPUQuotaWantsCompute)
}

func testGPUQuotaWantsCompute(t *testing.T, e *env) {
	ctx := t.Context()
	e.cp.StartWebhook(t, nil)
	const group = "compute"
	e.addNode(ctx, t, "compute-1", group, 10, a100(0))
	e.cp.CreateResourceQuota(ctx, t, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: namespace},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests." + gpuv1alpha1.QuotaCores: resource.MustParse("400")}},
	})
	const want = "namespace default limits GPU compute (ResourceQuota gpu on requests.gpu.tessera.dev/cores): must specify nvidia.com/gpucores for: main"

	_, err := e.cp.Kube.CoreV1().Pods(namespace).Create(ctx, gpuPod("no-compute", group, nil, ctr{name: "main", count: 1, memory: 1000}), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "spec.containers[0].resources.limits[nvidia.com/gpucores]: Required value: "+want) {
		t.Errorf("creating a slice without compute: %v; want refused saying %q", err, want)
	}

	optedOut := gpuPod("opted-out-no-compute", group, nil, ctr{name: "main", count: 1, memory: 1000})
	optedOut.Labels = map[string]string{admission.DefaultOptOutLabel: admission.DefaultOptOutValue}
	e.createPod(ctx, t, optedOut)
	e.waitFailedScheduling(ctx, t, "opted-out-no-compute", want)

	e.createPod(ctx, t, gpuPod("with-compute", group, nil, ctr{name: "main", count: 1, memory: 1000, core: 20}))
	e.waitBound(ctx, t, "with-compute")
	for _, name := range []string{"opted-out-no-compute", "with-compute"} {
		e.deletePod(ctx, t, name)
	}
	e.checkNoOvercommit(ctx, t)
}

package kubelet

import (
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

// TestQuotaTotalsAreNotDevices admits a pod carrying the GPU quota's
// totals, as the webhook writes them, through the kubelet's device manager:
// no device plugin serves gpu.tessera.dev/*, so the kubelet allocates only
// the GPUs and the pod gets them as without the totals.
func TestQuotaTotalsAreNotDevices(t *testing.T) {
	cp, logger, ctx, node, dir := startNode(t, "quota-node", fourGPUs)
	kl := startKubeletAndPlugin(ctx, t, logger, cp, pluginConfig(node, filepath.Join(dir, "gpus.yaml")))
	resources := gpus(2)
	for name, v := range map[corev1.ResourceName]int64{gpuv1alpha1.QuotaGPUs: 2, gpuv1alpha1.QuotaMemory: 16000, gpuv1alpha1.QuotaCores: 100} {
		resources.Limits[name] = *resource.NewQuantity(v, resource.DecimalSI)
	}
	pod := framework.CreateBoundPod(ctx, t, cp, node, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "with-totals"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "trainer", Image: "cuda", Resources: resources}}},
	}, placed("trainer", gpuv1alpha1.ContainerApp, slice("GPU-k-0", 0, 8000, 50), slice("GPU-k-1", 1, 8000, 50)))
	opts, err := kl.admit(ctx, pod)
	if err != nil {
		t.Fatalf("the kubelet did not admit a pod carrying the quota totals: %v", err)
	}
	if opts["trainer"] == nil {
		t.Fatal("the container got no device options")
	}
	devices := kl.mgr.GetDevices(string(pod.UID), "trainer")
	if len(devices) != 1 || len(devices[gpuResource]) != 2 {
		t.Errorf("the kubelet recorded devices %v, want 2 of %s and nothing else", devices, gpuResource)
	}
}

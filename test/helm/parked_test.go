package helm

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

// checkParkedLabelPolicy checks that the installed ValidatingAdmissionPolicy
// lets no one but the scheduler set the parked label: not on a pod
// created with it, nor on a pod already there. The scheduler's own writes
// are checkRequeuePolicy's.
func checkParkedLabelPolicy(ctx context.Context, t *testing.T, cp *framework.ControlPlane) {
	createNamespace(ctx, t, cp, "parked")
	pods := cp.Kube.CoreV1().Pods("parked")
	pod := func(name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "parked", Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example/app:1"}}},
		}
	}
	const want = "metadata.labels[" + gpuv1alpha1.ParkedLabel + "]: only the Tessera scheduler sets this label"

	// The API server loads a new policy a moment after it is created;
	// until then a pod it should refuse is created and deleted here.
	var refusal error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if _, refusal = pods.Create(ctx, pod("comes-parked", map[string]string{gpuv1alpha1.ParkedLabel: "true"}), metav1.CreateOptions{}); refusal == nil {
			return false, pods.Delete(ctx, "comes-parked", metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("a pod could still be created parked after a minute: %v", err)
	}
	if !strings.Contains(refusal.Error(), want) {
		t.Errorf("creating a parked pod was refused with %q, want %q", refusal, want)
	}

	if _, err := pods.Create(ctx, pod("plain", map[string]string{"app": "train"}), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a pod without the label: %v", err)
	}
	_, err = pods.Patch(ctx, "plain", types.MergePatchType, []byte(`{"metadata":{"labels":{"`+gpuv1alpha1.ParkedLabel+`":"true"}}}`), metav1.PatchOptions{})
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("labelling a pod parked: %v, want refused with %q", err, want)
	}
	if _, err := pods.Patch(ctx, "plain", types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"serve"}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("changing another label: %v, want allowed", err)
	}
}

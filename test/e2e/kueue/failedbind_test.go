package kueue

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/webhook/admission"
)

// testFailedBind has the API server refuse every binding of a gang's pod,
// as an admission policy or a node going away would, while a pod outside
// the gang, of another namespace and controller, that copied the gang's
// annotation asks for the same room: the room stays held for the gang,
// and the gang's pod is placed in it once its binding is allowed. Run it
// after testGangFit, whose Workloads hold the rest of the GPUs.
func testFailedBind(ctx context.Context, t *testing.T, e *env) {
	const node = "gang-bind"
	e.addNode(ctx, t, node, 1)
	allowBindings := e.cp.RefuseBindings(ctx, t, "failbind-")

	job := e.submit(ctx, t, gpuJob("gang", "failbind", 1, slice{gpus: 1, memoryMiB: 81920, cores: 10}))
	e.waitAdmitted(t, job, "gang")
	var key string
	framework.WaitFor(t, time.Minute, "the binding of Job failbind's pod to be refused", func() (bool, string) {
		pods, err := e.cp.Kube.CoreV1().Pods("gang").List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=failbind"})
		if err != nil || len(pods.Items) == 0 {
			return false, "no pod yet"
		}
		key = pods.Items[0].Annotations[gpuv1alpha1.GangHoldAnnotation]
		for _, c := range pods.Items[0].Status.Conditions {
			if c.Type == corev1.PodScheduled && strings.Contains(c.Message, "failbind-") {
				return true, ""
			}
		}
		return false, "not refused yet"
	})

	// The copier's controller exists, so that the garbage collector
	// leaves the pod be, and the webhook admits a controlled pod.
	owner, err := e.cp.Kube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "copier"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	other := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "outside-the-gang", Namespace: "default",
			Annotations:     map[string]string{gpuv1alpha1.GangHoldAnnotation: key},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}},
		},
		Spec: corev1.PodSpec{
			SchedulerName:                 admission.DefaultSchedulerName,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "main", Image: "registry.example/x:1", Resources: corev1.ResourceRequirements{
				Limits: slice{gpus: 1, memoryMiB: 81920, cores: 10}.perGPU(),
			}}},
		},
	}
	if _, err := e.cp.Kube.CoreV1().Pods(other.Namespace).Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		p, err := e.cp.Kube.CoreV1().Pods(other.Namespace).Get(ctx, other.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "" {
			t.Fatalf("a pod outside the gang was placed on %s, in the room held for the gang whose pod failed to bind", p.Spec.NodeName)
		}
		time.Sleep(500 * time.Millisecond)
	}

	allowBindings()
	e.waitPlaced(ctx, t, job, node, 1)
	if err := e.cp.Kube.CoreV1().Pods(other.Namespace).Delete(ctx, other.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if err := e.cp.Kube.CoreV1().ConfigMaps(owner.Namespace).Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

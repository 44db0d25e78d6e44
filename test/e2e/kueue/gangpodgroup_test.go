package kueue

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/webhook/admission"
)

// TestGangFitWithPodGroup runs both of Tessera's gang paths on one Job: the
// gang-fit check admits it once its 3 pods fit and holds their room, and
// its pods, which name a PodGroup of minCount 3, are placed by
// tessera-scheduler's pod group cycle in that room, whole.
func TestGangFitWithPodGroup(t *testing.T) {
	opts := controlPlaneOptions()
	opts.Gangs = true
	e := startPluginEnvOn(t, opts, map[string]string{"gangFit:\n            enabled: false": "gangFit:\n            enabled: true"})
	ctx := context.Background()
	const node = "podgroup-a100"
	e.addNode(ctx, t, node, 4)
	if err := framework.ApplyManifests(ctx, e.cp.Config, filepath.Join(framework.RepoRoot(), "deploy", "examples", "kueue", "gang-fit.yaml")); err != nil {
		t.Fatalf("applying the gang-fit example: %v", err)
	}
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "gang"},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 3},
		}},
	}
	if _, err := e.cp.Kube.SchedulingV1beta1().PodGroups("gang").Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	job := gpuJob("gang", "train", 3, slice{gpus: 1, memoryMiB: 30000, cores: 10})
	job.Spec.Template.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("train")}
	job = e.submit(ctx, t, job)
	e.waitAdmitted(t, job, "gang")
	e.waitPlaced(ctx, t, job, node, 3)

	// kube-scheduler marks a PodGroup its pod group cycle placed.
	framework.WaitFor(t, 30*time.Second, "PodGroup train to be marked scheduled", func() (bool, string) {
		got, err := e.cp.Kube.SchedulingV1beta1().PodGroups("gang").Get(ctx, "train", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(got.Status.Conditions, schedulingv1beta1.PodGroupInitiallyScheduled)
		return c != nil && c.Status == metav1.ConditionTrue, fmt.Sprint(got.Status.Conditions)
	})

	wl := e.workload(ctx, t, job)
	hold := string(wl.GetUID()) + "/main"
	pods, err := e.cp.Kube.CoreV1().Pods("gang").List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=train"})
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods.Items {
		if pod.Spec.SchedulingGroup == nil || ptr.Deref(pod.Spec.SchedulingGroup.PodGroupName, "") != "train" {
			t.Errorf("pod %s is in no PodGroup: spec.schedulingGroup %v", pod.Name, pod.Spec.SchedulingGroup)
		}
		if got := pod.Annotations[gpuv1alpha1.GangHoldAnnotation]; got != hold {
			t.Errorf("pod %s: %s is %q, want %q, the room gang-fit held", pod.Name, gpuv1alpha1.GangHoldAnnotation, got, hold)
		}
	}
	e.cp.CheckGPUAccounting(ctx, t, admission.DefaultSchedulerName)
}

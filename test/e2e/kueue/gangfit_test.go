package kueue

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/options"
	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/webhook/admission"
)

// TestGangFit runs the gang-fit admission check (deploy/examples/kueue/
// gang-fit.yaml) on one node of 4 A100s (81,920 MiB each) that earlier pods
// leave in fragments of 31,920 MiB:
//   - a Job of 2 × 40,000 MiB fits the ClusterQueue's quota but not the
//     fragments: the check sends it back to the queue with the reason, and
//     it stays suspended with no pods;
//   - a Job of 3 × 30,000 MiB fits: it is admitted, its pods carry the key
//     of their held room, and they are placed;
//   - once the fragments' pods end, the first Job is admitted and placed;
//   - a Job with a pod larger than any GPU is sent back with the reason,
//     and admitted and placed once a node with larger GPUs joins.
//   - the room of a Job whose pod fails to bind stays held (testFailedBind).
//
// The GPU accounting invariants hold at the end. It runs in extender mode
// and in plugin mode.
func TestGangFit(t *testing.T) {
	t.Run("extender", func(t *testing.T) {
		testGangFit(t, startEnvWith(t, func(c *options.Config) { c.GangFit.Enabled = true }))
	})
	t.Run("plugin", func(t *testing.T) {
		testGangFit(t, startPluginEnv(t, map[string]string{"gangFit:\n            enabled: false": "gangFit:\n            enabled: true"}))
	})
}

func testGangFit(t *testing.T, e *env) {
	ctx := context.Background()
	const node = "gang-a100"
	e.addNode(ctx, t, node, 4)
	var fragments []*corev1.Pod
	for i := range 4 {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fragment-%d", i)},
			Spec:       corev1.PodSpec{SchedulerName: admission.DefaultSchedulerName, Containers: []corev1.Container{{Name: "main", Image: "registry.example/x:1"}}},
		}
		fragments = append(fragments, framework.CreateBoundPod(ctx, t, e.cp, node, pod, gpuv1alpha1.ContainerAllocation{
			Name: "main", Kind: gpuv1alpha1.ContainerApp,
			Devices: []gpuv1alpha1.DeviceAllocation{{UUID: fmt.Sprintf("GPU-%s-%d", node, i), MemoryMiB: 50000, Cores: 10}},
		}))
	}
	if err := framework.ApplyManifests(ctx, e.cp.Config, filepath.Join(framework.RepoRoot(), "deploy", "examples", "kueue", "gang-fit.yaml")); err != nil {
		t.Fatalf("applying the gang-fit example: %v", err)
	}

	big := e.submit(ctx, t, gpuJob("gang", "big", 2, slice{gpus: 1, memoryMiB: 40000, cores: 10}))
	t.Run("fits the quota, not the fragments", func(t *testing.T) {
		framework.WaitFor(t, time.Minute, "the check to send Job big back to the queue", func() (bool, string) {
			state, message := e.gangFitState(ctx, t, big)
			return state == "Retry" && strings.Contains(message, "fits no node's GPUs as they are now"), state + ": " + message
		})
		e.waitSuspendedWithoutPods(ctx, t, big)
	})

	small := e.submit(ctx, t, gpuJob("gang", "small", 3, slice{gpus: 1, memoryMiB: 30000, cores: 10}))
	t.Run("fits: held and placed", func(t *testing.T) {
		e.waitAdmitted(t, small, "gang")
		if state, message := e.gangFitState(ctx, t, small); state != "Ready" || !strings.Contains(message, "all 3 GPU pods fit") {
			t.Errorf("check of Job small: %s %q, want Ready, all 3 pods fitting", state, message)
		}
		e.waitPlaced(ctx, t, small, node, 3)
		wl := e.workload(ctx, t, small)
		want := string(wl.GetUID()) + "/main"
		pods, err := e.cp.Kube.CoreV1().Pods("gang").List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=small"})
		if err != nil {
			t.Fatal(err)
		}
		for _, pod := range pods.Items {
			if got := pod.Annotations[gpuv1alpha1.GangHoldAnnotation]; got != want {
				t.Errorf("pod %s: %s is %q, want %q from the check's podSetUpdates", pod.Name, gpuv1alpha1.GangHoldAnnotation, got, want)
			}
		}
	})

	t.Run("admitted once the GPUs free", func(t *testing.T) {
		for _, pod := range fragments {
			if err := e.cp.Kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
				t.Fatal(err)
			}
		}
		e.waitAdmitted(t, big, "gang")
		e.waitPlaced(ctx, t, big, node, 2)
	})

	t.Run("a pod larger than any GPU waits for a node that holds it", func(t *testing.T) {
		larger := e.submit(ctx, t, gpuJob("gang", "larger", 1, slice{gpus: 1, memoryMiB: 90000, cores: 10}))
		framework.WaitFor(t, time.Minute, "the check to send Job larger back to the queue", func() (bool, string) {
			state, message := e.gangFitState(ctx, t, larger)
			return state == "Retry" && strings.Contains(message, "fits no node's GPUs even with every GPU free"), state + ": " + message
		})
		e.waitSuspendedWithoutPods(ctx, t, larger)
		// A node with larger GPUs joins, as a node pool scales up.
		e.addNodeOf(ctx, t, "gang-h200", 1, "NVIDIA H200", 143771)
		e.waitAdmitted(t, larger, "gang")
		e.waitPlaced(ctx, t, larger, "gang-h200", 1)
	})

	t.Run("a failed bind gives the held room back", func(t *testing.T) { testFailedBind(ctx, t, e) })
	e.cp.CheckGPUAccounting(ctx, t, admission.DefaultSchedulerName)
}

// gangFitState returns the state and message of the check
// tessera-gang-fit on job's Workload; empty before it has one.
func (e *env) gangFitState(ctx context.Context, t *testing.T, job *batchv1.Job) (state, message string) {
	t.Helper()
	wl := e.workload(ctx, t, job)
	if wl == nil {
		return "", "no Workload yet"
	}
	checks, _, _ := unstructured.NestedSlice(wl.Object, "status", "admissionChecks")
	for _, c := range checks {
		if c, ok := c.(map[string]any); ok && c["name"] == "tessera-gang-fit" {
			return fmt.Sprint(c["state"]), fmt.Sprint(c["message"])
		}
	}
	return "", "no state of the check"
}

// gangFitRejection returns why the check tessera-gang-fit rejected job's
// Workload, as Kueue tells it once it has deactivated the Workload: in its
// AdmissionCheckRejected event. The check's Rejected state itself does not
// last: Kueue deactivates the Workload and resets its checks to Pending
// ("Reset to Pending after eviction. Previously: Rejected"), which a
// loaded machine can do between two reads of the state.
func (e *env) gangFitRejection(ctx context.Context, t *testing.T, job *batchv1.Job) string {
	t.Helper()
	wl := e.workload(ctx, t, job)
	if wl == nil {
		return "no Workload yet"
	}
	if active, found, _ := unstructured.NestedBool(wl.Object, "spec", "active"); !found || active {
		state, message := e.gangFitState(ctx, t, job)
		return fmt.Sprintf("Workload still active; check %s: %s", state, message)
	}
	events, err := e.cp.Kube.CoreV1().Events(job.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + wl.GetName() + ",reason=AdmissionCheckRejected",
	})
	if err != nil {
		return err.Error()
	}
	for _, ev := range events.Items {
		if strings.Contains(ev.Message, "tessera-gang-fit") {
			return ev.Message
		}
	}
	return "Workload deactivated, with no AdmissionCheckRejected event of tessera-gang-fit yet"
}

// waitSuspendedWithoutPods waits until job is suspended with no pods, and
// checks that it stays so for a few seconds.
func (e *env) waitSuspendedWithoutPods(ctx context.Context, t *testing.T, job *batchv1.Job) {
	t.Helper()
	framework.WaitFor(t, 30*time.Second, "Job "+job.Name+" to be suspended with no pods", func() (bool, string) {
		return e.suspendedWithoutPods(ctx, job)
	})
	for range 5 {
		time.Sleep(time.Second)
		if ok, why := e.suspendedWithoutPods(ctx, job); !ok {
			t.Fatalf("Job %s was let in: %s", job.Name, why)
		}
	}
}

// suspendedWithoutPods reports whether job is suspended with no pods, and
// if not, what it is.
func (e *env) suspendedWithoutPods(ctx context.Context, job *batchv1.Job) (bool, string) {
	got, err := e.cp.Kube.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	pods, err := e.cp.Kube.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job.Name})
	if err != nil {
		return false, err.Error()
	}
	return ptr.Deref(got.Spec.Suspend, false) && len(pods.Items) == 0, fmt.Sprintf("suspend %v, %d pods", got.Spec.Suspend, len(pods.Items))
}

package kueue

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/tessera-gpu/tessera/test/framework"
)

// testNoQueueName runs last, and first deletes the borrowing and the
// reclaiming Jobs to make room in team-b. A Job and a plain pod that name
// no queue, in a team's namespace, which Kueue manages (the shipped
// configuration's managedJobsNamespaceSelector), are given the
// namespace's LocalQueue "default" by Kueue, counted by the team's
// ClusterQueue and placed: work written without the label does not
// bypass the team's queue and quota. (A Job without a queue name in a
// namespace Kueue does not manage is left alone: testSuspendedJobResized.)
func testNoQueueName(ctx context.Context, t *testing.T, e *env, node string) {
	for _, job := range []struct{ namespace, name string }{{"team-a", "borrower"}, {"team-b", "reclaimer"}} {
		e.deleteJob(ctx, t, job.namespace, job.name)
	}
	job := gpuJob("team-b", "unlabelled", 1, slice{gpus: 1, memoryMiB: 5000, cores: 10})
	delete(job.Labels, queueLabel)
	created := e.submit(ctx, t, job)
	if got := created.Labels[queueLabel]; got != localQueue {
		t.Errorf("Job %s without a queue name: labelled %s=%q, want Kueue to give it %q", job.Name, queueLabel, got, localQueue)
	}
	e.waitAdmitted(t, created, "team-b")
	e.waitPlaced(ctx, t, created, node, 1)

	pod := e.placePlainPod(ctx, t, plainPod("team-b", "unlabelled", nil, slice{gpus: 1, memoryMiB: 5000, cores: 10}), node)
	if got := pod.Labels[queueLabel]; got != localQueue {
		t.Errorf("pod %s without a queue name: labelled %s=%q, want Kueue to give it %q", pod.Name, queueLabel, got, localQueue)
	}
}

// testNeverFits runs after testNoQueueName: a Job whose one pod asks for
// more GPU memory than any GPU has is admitted with a warning that names
// the largest GPU, and is not left to wait without a reason: its pod
// stays Pending, told that no GPU has the memory; or, under an admission
// check, its Workload is held back with one.
func testNeverFits(ctx context.Context, t *testing.T, e *env) {
	kube, warnings := e.cp.ClientWithWarnings(t)
	job := gpuJob("team-b", "never-fits", 1, slice{gpus: 1, memoryMiB: 90000, cores: 10})
	created, err := kube.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Job %s: %v", job.Name, err)
	}
	want := `asks for 90000 MiB of GPU memory, more than any GPU in the cluster has (largest: 81920 MiB)`
	if got := warnings.Take(); !slices.ContainsFunc(got, func(w string) bool { return strings.Contains(w, want) }) {
		t.Errorf("warnings creating Job %s: %q, want one saying %q", job.Name, got, want)
	}
	framework.WaitFor(t, time.Minute, "Job "+job.Name+" to be held with a reason", func() (bool, string) {
		if why := e.checkRefused(ctx, t, created); why != "" {
			t.Logf("Workload held back: %s", why)
			return true, ""
		}
		pods, err := e.cp.Kube.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job.Name})
		if err != nil || len(pods.Items) != 1 {
			return false, fmt.Sprintf("pods: %d (%v)", len(pods.Items), err)
		}
		pod := pods.Items[0]
		if pod.Spec.NodeName != "" {
			t.Fatalf("pod %s of a Job that can never fit was bound to %s", pod.Name, pod.Spec.NodeName)
		}
		events, err := e.cp.Kube.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod.Name})
		if err != nil {
			return false, err.Error()
		}
		for _, ev := range events.Items {
			if ev.Reason == "FailedScheduling" && strings.Contains(ev.Message, "not enough memory") {
				t.Logf("pod %s: %s", pod.Name, ev.Message)
				return true, ""
			}
		}
		return false, fmt.Sprintf("pod %s has no FailedScheduling event saying not enough memory", pod.Name)
	})
}

// checkRefused returns why an admission check holds job's Workload back
// (Retry or Rejected, with its message), or "".
func (e *env) checkRefused(ctx context.Context, t *testing.T, job *batchv1.Job) string {
	wl := e.workload(ctx, t, job)
	if wl == nil {
		return ""
	}
	checks, _, _ := unstructured.NestedSlice(wl.Object, "status", "admissionChecks")
	for _, c := range checks {
		c, _ := c.(map[string]any)
		if state := fmt.Sprint(c["state"]); (state == "Retry" || state == "Rejected") && c["message"] != "" {
			return fmt.Sprintf("%s: %s %v", c["name"], state, c["message"])
		}
	}
	return ""
}

// deleteJob deletes a Job with its pods, which frees its quota in Kueue.
func (e *env) deleteJob(ctx context.Context, t *testing.T, namespace, name string) {
	t.Helper()
	err := e.cp.Kube.BatchV1().Jobs(namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	if err != nil {
		t.Fatalf("deleting Job %s/%s: %v", namespace, name, err)
	}
}

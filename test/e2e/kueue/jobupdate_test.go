package kueue

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// testSuspendedJobResized changes the GPU request of a suspended Job that
// never started, which the API server allows (MutablePodResourcesForSuspendedJobs):
// Tessera's webhook writes the new totals into its template, and an update
// that leaves the resources, such as a new label on the Job, goes through
// unchanged. The Job is in no queue, so Kueue leaves it alone.
func testSuspendedJobResized(ctx context.Context, t *testing.T, e *env) {
	jobs := e.cp.Kube.BatchV1().Jobs(metav1.NamespaceDefault)
	job := gpuJob(metav1.NamespaceDefault, "resized", 1, slice{gpus: 2, memoryMiB: 1000, cores: 10})
	delete(job.Labels, queueLabel)
	job.Spec.Suspend = ptr.To(true)
	created, err := jobs.Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Job %s: %v", job.Name, err)
	}
	checkMemoryTotal(t, created, 2000)

	// The job controller writes the Job's status meanwhile: each update
	// reads it afresh.
	update := func(what string, change func(j *batchv1.Job)) *batchv1.Job {
		var updated *batchv1.Job
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			j, err := jobs.Get(ctx, job.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			change(j)
			updated, err = jobs.Update(ctx, j, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return updated
	}
	checkMemoryTotal(t, update("labelling the suspended Job", func(j *batchv1.Job) { j.Labels["team"] = "a" }), 2000)
	checkMemoryTotal(t, update("resizing the suspended Job", func(j *batchv1.Job) {
		r := &j.Spec.Template.Spec.Containers[0].Resources
		r.Limits["nvidia.com/gpumem"], r.Requests["nvidia.com/gpumem"] = quantity(3000), quantity(3000)
	}), 6000)
	if err := jobs.Delete(ctx, job.Name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting Job %s: %v", job.Name, err)
	}
}

// checkMemoryTotal checks the GPU memory total of the Job's first
// container, in limits and requests.
func checkMemoryTotal(t *testing.T, job *batchv1.Job, want int64) {
	t.Helper()
	r := job.Spec.Template.Spec.Containers[0].Resources
	limit, request := r.Limits[gpuv1alpha1.QuotaMemory], r.Requests[gpuv1alpha1.QuotaMemory]
	if limit.Value() != want || request.Value() != want {
		t.Errorf("Job %s: %s is %s in limits and %s in requests, want %d", job.Name, gpuv1alpha1.QuotaMemory, limit.String(), request.String(), want)
	}
}

package kueue

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

// testBorrowAndReclaim runs after the Job and the plain pod: team-a holds
// 2 of its 4 GPUs, team-b 1 of its 4. A Job of 4 more GPUs in team-a is
// admitted by borrowing 2 of team-b's; when team-b then asks for 3, Kueue
// takes its GPUs back by preempting the borrowing Job, which is suspended
// and loses its pods, and team-b's Job is admitted and placed.
func testBorrowAndReclaim(ctx context.Context, t *testing.T, e *env, node string) {
	borrower := e.submit(ctx, t, gpuJob("team-a", "borrower", 4, slice{gpus: 1, memoryMiB: 10000, cores: 10}))
	e.waitAdmitted(t, borrower, "team-a")
	e.waitPlaced(ctx, t, borrower, node, 4)
	e.waitBorrowed(t, "team-a", gpuv1alpha1.QuotaGPUs, 2)

	reclaimer := e.submit(ctx, t, gpuJob("team-b", "reclaimer", 3, slice{gpus: 1, memoryMiB: 10000, cores: 10}))
	framework.WaitFor(t, time.Minute, "Kueue to preempt the borrowing Job", func() (bool, string) {
		c := condition(e.workload(ctx, t, borrower), "Preempted")
		return c != nil && c["status"] == "True" && c["reason"] == "InCohortReclamation", fmt.Sprint(c)
	})
	framework.WaitFor(t, time.Minute, "the borrowing Job to be suspended with no pods", func() (bool, string) {
		return e.suspendedWithoutPods(ctx, borrower)
	})
	e.waitAdmitted(t, reclaimer, "team-b")
	e.waitPlaced(ctx, t, reclaimer, node, 3)
	e.waitBorrowed(t, "team-a", gpuv1alpha1.QuotaGPUs, 0)
	if c := condition(e.workload(ctx, t, e.job(ctx, t, "team-a", "slices")), "Admitted"); c == nil || c["status"] != "True" {
		t.Errorf("team-a's Job within its nominal quota lost its admission: %v", c)
	}
}

// waitBorrowed waits until the ClusterQueue borrows want of resource from
// its cohort.
func (e *env) waitBorrowed(t *testing.T, clusterQueue string, resource corev1.ResourceName, want int64) {
	t.Helper()
	framework.WaitFor(t, 30*time.Second, fmt.Sprintf("ClusterQueue %s to borrow %d %s", clusterQueue, want, resource), func() (bool, string) {
		got, err := e.usage(clusterQueue, "borrowed")
		return err == nil && got[resource] == want, fmt.Sprintf("borrowed %v (%v)", got, err)
	})
}

func (e *env) job(ctx context.Context, t *testing.T, namespace, name string) *batchv1.Job {
	t.Helper()
	job, err := e.cp.Kube.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return job
}

package kueue

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/webhook/admission"
)

// queueLabel names the LocalQueue a Job is submitted to; localQueue is
// each team's in the examples, the one Kueue gives work that names none.
const (
	queueLabel = "kueue.x-k8s.io/queue-name"
	localQueue = "default"
)

// slice is one pod's GPU request, per GPU as the user writes it under
// nvidia.com/*.
type slice struct{ gpus, memoryMiB, cores int64 }

// perGPU is the request as the user writes it.
func (s slice) perGPU() corev1.ResourceList {
	return corev1.ResourceList{
		"nvidia.com/gpu":      quantity(s.gpus),
		"nvidia.com/gpumem":   quantity(s.memoryMiB),
		"nvidia.com/gpucores": quantity(s.cores),
	}
}

// totals are Tessera's totals of the request, which Kueue's quotas count.
func (s slice) totals() map[corev1.ResourceName]int64 {
	return map[corev1.ResourceName]int64{
		gpuv1alpha1.QuotaGPUs: s.gpus, gpuv1alpha1.QuotaMemory: s.gpus * s.memoryMiB, gpuv1alpha1.QuotaCores: s.gpus * s.cores,
	}
}

func quantity(v int64) resource.Quantity { return *resource.NewQuantity(v, resource.DecimalSI) }

// gpuJob is a Job of pods pods, each asking for s per GPU only, in the
// namespace's LocalQueue: Tessera's webhook writes the totals Kueue
// counts into its pod template.
func gpuJob(namespace, name string, pods int32, s slice) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{queueLabel: localQueue}},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To(pods),
			Completions: ptr.To(pods),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy:                 corev1.RestartPolicyNever,
				TerminationGracePeriodSeconds: ptr.To[int64](0),
				Containers: []corev1.Container{{
					Name:      "train",
					Image:     "registry.example/train:1",
					Resources: corev1.ResourceRequirements{Limits: s.perGPU()},
				}},
			}},
		},
	}
}

// TestKueue submits work of GPU slices to the teams' queues: a Job within
// the cohort's quota is suspended by Kueue, admitted, resumed, and its pods
// are created by the job controller and placed by Tessera with an
// allocation each, and team-a's ClusterQueue counts Tessera's totals; a Job
// asking for more GPUs than the cohort has stays suspended; a plain pod is
// gated until admitted (testPlainPod); and a team borrows from the other,
// which takes its GPUs back (testBorrowAndReclaim); a Job of 2 GPUs per
// pod is counted by the sum (testTwoGPUs); work that names no queue joins
// its team's (testNoQueueName); a Job that can never fit is held with a
// reason (testNeverFits). Every Job writes its request per GPU only:
// Tessera's webhook writes the totals Kueue counts.
func TestKueue(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	const node = "kueue-a100"
	e.addNode(ctx, t, node, 4)

	t.Run("admitted and placed", func(t *testing.T) {
		job := e.submit(ctx, t, gpuJob("team-a", "slices", 2, slice{gpus: 1, memoryMiB: 20000, cores: 30}))
		e.waitAdmitted(t, job, "team-a")
		framework.WaitFor(t, 30*time.Second, "Kueue to resume the Job", func() (bool, string) {
			got, err := e.cp.Kube.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
			return err == nil && !ptr.Deref(got.Spec.Suspend, true), fmt.Sprint(err)
		})
		e.waitPlaced(ctx, t, job, node, 2)
		e.waitUsage(t, "team-a", map[corev1.ResourceName]int64{
			gpuv1alpha1.QuotaGPUs: 2, gpuv1alpha1.QuotaMemory: 40000, gpuv1alpha1.QuotaCores: 60,
		})
	})

	t.Run("over the cohort's quota", func(t *testing.T) {
		// The two teams hold 8 GPUs between them.
		job := e.submit(ctx, t, gpuJob("team-a", "too-big", 1, slice{gpus: 9, memoryMiB: 1000, cores: 10}))
		framework.WaitFor(t, 30*time.Second, "Kueue to find no room for the Job", func() (bool, string) {
			wl := e.workload(ctx, t, job)
			if wl == nil {
				return false, "no Workload yet"
			}
			c := condition(wl, "QuotaReserved")
			return c != nil && c["status"] == "False" && c["reason"] == "Pending", fmt.Sprint(c)
		})
		got, err := e.cp.Kube.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil || !ptr.Deref(got.Spec.Suspend, false) {
			t.Fatalf("Job %s: want it still suspended, got %v (%v)", job.Name, got.Spec.Suspend, err)
		}
		pods, err := e.cp.Kube.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job.Name})
		if err != nil || len(pods.Items) != 0 {
			t.Fatalf("Job %s: want no pods, got %d (%v)", job.Name, len(pods.Items), err)
		}
	})

	t.Run("a plain pod", func(t *testing.T) { testPlainPod(ctx, t, e, node) })
	t.Run("borrowing and reclaim", func(t *testing.T) { testBorrowAndReclaim(ctx, t, e, node) })
	t.Run("a pod of 2 GPUs counted as their sum", func(t *testing.T) { testTwoGPUs(ctx, t, e, node) })
	t.Run("a suspended Job resized", func(t *testing.T) { testSuspendedJobResized(ctx, t, e) })
	t.Run("work that names no queue", func(t *testing.T) { testNoQueueName(ctx, t, e, node) })
	t.Run("a Job that never fits", func(t *testing.T) { testNeverFits(ctx, t, e) })
	e.cp.CheckGPUAccounting(ctx, t, admission.DefaultSchedulerName)
}

// submit creates job and checks that Kueue's webhook suspended it and
// Tessera's wrote the totals of its request, per GPU, into its template.
func (e *env) submit(ctx context.Context, t *testing.T, job *batchv1.Job) *batchv1.Job {
	t.Helper()
	created, err := e.cp.Kube.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Job %s/%s: %v", job.Namespace, job.Name, err)
	}
	if !ptr.Deref(created.Spec.Suspend, false) {
		t.Fatalf("Job %s/%s was not suspended at creation: Kueue's webhook did not run", job.Namespace, job.Name)
	}
	for _, c := range created.Spec.Template.Spec.Containers {
		l := c.Resources.Limits
		gpus, mem, cores := l["nvidia.com/gpu"], l["nvidia.com/gpumem"], l["nvidia.com/gpucores"]
		want := slice{gpus: gpus.Value(), memoryMiB: mem.Value(), cores: cores.Value()}.totals()
		for name, total := range want {
			limit, request := l[name], c.Resources.Requests[name]
			if limit.Value() != total || request.Value() != total {
				t.Errorf("Job %s/%s container %s: %s is %s in limits and %s in requests, want %d written by Tessera's webhook",
					job.Namespace, job.Name, c.Name, name, limit.String(), request.String(), total)
			}
		}
	}
	return created
}

// workload returns the Workload Kueue made for job (a Job, or a pod of
// its own), or nil.
func (e *env) workload(ctx context.Context, t *testing.T, job metav1.Object) *unstructured.Unstructured {
	t.Helper()
	list, err := e.dynamic.Resource(framework.KueueResource("workloads")).Namespace(job.GetNamespace()).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing Workloads: %v", err)
	}
	for i := range list.Items {
		for _, ref := range list.Items[i].GetOwnerReferences() {
			if ref.UID == job.GetUID() {
				return &list.Items[i]
			}
		}
	}
	return nil
}

// condition returns the Workload's condition of type kind, or nil.
func condition(wl *unstructured.Unstructured, kind string) map[string]any {
	conditions, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
	for _, c := range conditions {
		if c, ok := c.(map[string]any); ok && c["type"] == kind {
			return c
		}
	}
	return nil
}

// waitAdmitted waits until job's Workload is admitted to clusterQueue.
func (e *env) waitAdmitted(t *testing.T, job *batchv1.Job, clusterQueue string) {
	t.Helper()
	framework.WaitFor(t, 30*time.Second, "Kueue to admit Job "+job.Name, func() (bool, string) {
		wl := e.workload(context.Background(), t, job)
		if wl == nil {
			return false, "no Workload yet"
		}
		cq, _, _ := unstructured.NestedString(wl.Object, "status", "admission", "clusterQueue")
		c := condition(wl, "Admitted")
		return c != nil && c["status"] == "True" && cq == clusterQueue, fmt.Sprintf("clusterQueue %q, Admitted %v", cq, c)
	})
}

// waitPlaced waits until the job controller has made pods pods for job and
// Tessera has bound each to node with its GPUAllocation.
func (e *env) waitPlaced(ctx context.Context, t *testing.T, job *batchv1.Job, node string, pods int) {
	t.Helper()
	framework.WaitFor(t, time.Minute, fmt.Sprintf("%d pods of Job %s to be placed", pods, job.Name), func() (bool, string) {
		list, err := e.cp.Kube.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job.Name})
		if err != nil {
			return false, err.Error()
		}
		placed := 0
		for _, pod := range list.Items {
			alloc, err := e.cp.Tessera.GpuV1alpha1().GPUAllocations(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			if pod.Spec.NodeName == node && err == nil && alloc.Spec.PodUID == pod.UID {
				placed++
			}
		}
		return len(list.Items) == pods && placed == pods, fmt.Sprintf("%d pods, %d placed", len(list.Items), placed)
	})
}

// waitUsage waits until the ClusterQueue's usage of the example flavor is
// want.
func (e *env) waitUsage(t *testing.T, clusterQueue string, want map[corev1.ResourceName]int64) {
	t.Helper()
	framework.WaitFor(t, 30*time.Second, "ClusterQueue "+clusterQueue+" to count the admitted work", func() (bool, string) {
		got, err := e.usage(clusterQueue, "total")
		if err != nil {
			return false, err.Error()
		}
		for name, total := range want {
			if got[name] != total {
				return false, fmt.Sprintf("usage %v, want %v", got, want)
			}
		}
		return true, ""
	})
}

// usage returns one column of the ClusterQueue's flavorsUsage ("total"
// or "borrowed"), by resource.
func (e *env) usage(clusterQueue, column string) (map[corev1.ResourceName]int64, error) {
	cq, err := e.dynamic.Resource(framework.KueueResource("clusterqueues")).Get(context.Background(), clusterQueue, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	flavors, _, _ := unstructured.NestedSlice(cq.Object, "status", "flavorsUsage")
	got := map[corev1.ResourceName]int64{}
	for _, f := range flavors {
		resources, _, _ := unstructured.NestedSlice(f.(map[string]any), "resources")
		for _, r := range resources {
			r := r.(map[string]any)
			if q, err := resource.ParseQuantity(fmt.Sprint(r[column])); err == nil {
				got[corev1.ResourceName(fmt.Sprint(r["name"]))] += q.Value()
			}
		}
	}
	return got, nil
}

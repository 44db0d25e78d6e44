package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/tessera-gpu/tessera/test/framework"
)

// kueueExamples holds the example teams' queues (queues.yaml, teams.yaml)
// and, under jobs/, the Jobs local-up submits to them.
const kueueExamples = "deploy/examples/kueue"

// startKueue runs Kueue's controller manager (stopped with the control
// plane) and creates the example teams' namespaces and queues.
func (c *cluster) startKueue(ctx context.Context) error {
	if _, err := c.cp.StartKueueProcess(ctx); err != nil {
		return fmt.Errorf("starting Kueue (see %s): %w", filepath.Join(c.cp.Dir, "kueue.log"), err)
	}
	return framework.ApplyManifests(ctx, c.cp.Config,
		filepath.Join(kueueExamples, "queues.yaml"), filepath.Join(kueueExamples, "teams.yaml"))
}

// kueueDemo submits the example Jobs, waits until Kueue has admitted each
// and Tessera has placed its pods, and prints where they went.
func (c *cluster) kueueDemo(ctx context.Context, out io.Writer) error {
	files, err := filepath.Glob(filepath.Join(kueueExamples, "jobs", "*.yaml"))
	if err != nil {
		return err
	}
	if err := framework.ApplyManifests(ctx, c.cp.Config, files...); err != nil {
		return err
	}
	client, err := dynamic.NewForConfig(c.cp.Config)
	if err != nil {
		return err
	}
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "JOB\tCLUSTERQUEUE\tPOD\tNODE\tGPUS\tMEMORY(MiB)\tCORES(%)")
	for _, ns := range []string{"team-a", "team-b"} {
		jobs, err := c.cp.Kube.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, job := range jobs.Items {
			queue := waitAdmitted(ctx, client, &job)
			for _, line := range c.jobPlacements(ctx, &job) {
				fmt.Fprintf(w, "%s/%s\t%s\t%s\n", job.Namespace, job.Name, queue, line)
			}
		}
	}
	return w.Flush()
}

// waitAdmitted waits up to a minute for Kueue to admit job and returns
// the ClusterQueue it was admitted to, or why it was not.
func waitAdmitted(ctx context.Context, client dynamic.Interface, job *batchv1.Job) string {
	queue := "(not admitted)"
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := client.Resource(framework.KueueResource("workloads")).Namespace(job.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, wl := range list.Items {
			for _, ref := range wl.GetOwnerReferences() {
				if ref.UID != job.UID {
					continue
				}
				if cq, _, _ := unstructured.NestedString(wl.Object, "status", "admission", "clusterQueue"); cq != "" {
					queue = cq
					return true, nil
				}
			}
		}
		return false, nil
	})
	return queue
}

// jobPlacements waits up to a minute for the job's pods, as many as its
// parallelism, to be created and placed, and returns a line per pod: the
// pod, its node and the GPUs, memory and cores Tessera gave it, or why it
// is pending.
func (c *cluster) jobPlacements(ctx context.Context, job *batchv1.Job) []string {
	selector := metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job.Name}
	// The Job controller creates the pods one by one: the first may be
	// placed before the last exists.
	want := max(int(ptr.Deref(job.Spec.Parallelism, 1)), 1)
	var pods []corev1.Pod
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := c.cp.Kube.CoreV1().Pods(job.Namespace).List(ctx, selector)
		if err != nil {
			return false, nil
		}
		pods = list.Items
		placed := 0
		for _, pod := range pods {
			if pod.Spec.NodeName != "" {
				placed++
			}
		}
		return len(pods) >= want && placed == len(pods), nil
	})
	if len(pods) == 0 {
		return []string{"-\t-\t-\t-\t-"}
	}
	var lines []string
	for _, pod := range pods {
		alloc, err := c.cp.Tessera.GpuV1alpha1().GPUAllocations(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			lines = append(lines, fmt.Sprintf("%s\t-\t-\t-\t%s", pod.Name, pendingReason(ctx, c, &pod)))
			continue
		}
		var gpus []string
		var memory, cores int64
		for _, ct := range alloc.Spec.Containers {
			for _, d := range ct.Devices {
				gpus = append(gpus, fmt.Sprint(d.Index))
				memory += d.MemoryMiB
				cores += int64(d.Cores)
			}
		}
		lines = append(lines, fmt.Sprintf("%s\t%s\t%s\t%d\t%d", pod.Name, alloc.Spec.NodeName, strings.Join(gpus, ","), memory, cores))
	}
	return lines
}

package queue

import (
	"context"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
)

// jobWork plays the Jobs' containers: a Job works for its duration once
// all its pods run, as a distributed job starts at its rendezvous, then
// its pods succeed (their status written as their kubelets would), which
// frees their GPUs and completes the Job. A Job with pods Pending does no
// work and holds its GPUs meanwhile.
type jobWork struct {
	wg       *sync.WaitGroup
	kube     kubernetes.Interface
	tracker  *queueTracker
	duration time.Duration
}

// start works the Job in the background until its duration has passed or
// ctx ends; wg counts it.
func (w *jobWork) start(ctx context.Context, job string) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		select {
		case <-ctx.Done():
			return
		case <-time.After(w.duration):
		}
		if err := w.succeed(ctx, job); err != nil {
			if ctx.Err() == nil {
				klog.FromContext(ctx).Error(err, "Ending a Job failed", "job", job)
			}
			return
		}
		w.tracker.finished(job, time.Now())
	}()
}

// succeed marks every pod of the Job Succeeded.
func (w *jobWork) succeed(ctx context.Context, job string) error {
	pods := w.kube.CoreV1().Pods(harness.Namespace)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
	if err != nil {
		return fmt.Errorf("listing the pods of Job %s: %w", job, err)
	}
	for _, pod := range list.Items {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			now := metav1.Now()
			p.Status.Phase = corev1.PodSucceeded
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{
				Name: p.Spec.Containers[0].Name, Image: p.Spec.Containers[0].Image,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", StartedAt: now, FinishedAt: now}},
			}}
			_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{FieldManager: harness.FieldManager})
			return err
		})
		if err != nil {
			return fmt.Errorf("marking pod %s of Job %s Succeeded: %w", pod.Name, job, err)
		}
	}
	return nil
}

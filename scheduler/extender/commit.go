package extender

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// commit waits for the node's turn, writes the allocation and binds the pod.
// On failure it removes the allocation and frees the node's turn; the
// caller releases the reservation.
func (e *Extender) commit(ctx context.Context, pod *corev1.Pod, node string, containers []gpuv1alpha1.ContainerAllocation) error {
	start := e.Clock.Now()
	waitCtx, cancel := context.WithTimeoutCause(ctx, e.BindWaitTimeout,
		fmt.Errorf("bind wait timeout of %s passed", e.BindWaitTimeout))
	if e.Metrics != nil {
		e.Metrics.BindsWaiting.Inc()
	}
	err := e.Gate.Acquire(waitCtx, node, pod.UID)
	cancel()
	if e.Metrics != nil {
		e.Metrics.BindsWaiting.Dec()
		e.Metrics.BindQueueWait.Observe(e.Clock.Since(start).Seconds())
	}
	if err != nil {
		return err
	}

	alloc, err := e.createAllocation(ctx, pod, node, containers)
	if err != nil {
		e.Gate.Release(node, pod.UID)
		return err
	}
	e.Gate.Attach(node, pod.UID, alloc.UID)
	err = e.postBinding(ctx, pod, node)
	if err == nil {
		return nil
	}

	// A binding whose answer was lost (the request was cancelled, the
	// connection dropped) may still have been made: the pod decides.
	undoCtx, cancel := detach(ctx)
	defer cancel()
	logger := klog.FromContext(ctx)
	current, gerr := e.Kube.CoreV1().Pods(pod.Namespace).Get(undoCtx, pod.Name, metav1.GetOptions{})
	switch {
	case gerr == nil && current.UID == pod.UID && current.Spec.NodeName == node:
		logger.Info("Binding answered with an error but was made", "err", err)
		return nil
	case gerr != nil && !apierrors.IsNotFound(gerr):
		// Unknown whether the pod is bound: the allocation stays, so its
		// GPUs stay counted. A later bind of the pod replaces it; the
		// orphan sweep deletes it once the pod is gone.
		logger.Error(gerr, "Reading the pod after a failed binding; keeping its allocation")
		return err
	}
	if derr := e.deleteAllocation(undoCtx, alloc.Namespace, alloc.Name, alloc.UID); derr != nil {
		logger.Error(derr, "Removing the allocation of a failed bind")
	}
	e.Gate.Release(node, pod.UID)
	return err
}

// postBinding binds the pod to the node.
func (e *Extender) postBinding(ctx context.Context, pod *corev1.Pod, node string) error {
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := e.Kube.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("binding pod %s/%s to node %s: %w", pod.Namespace, pod.Name, node, err)
	}
	return nil
}

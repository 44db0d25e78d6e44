package commit

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// ErrAllocationKept says that a binding failed with its outcome unknown:
// the pod may be bound, or be bound yet, so its allocation was kept, and
// the GPUs reserved for the pod stay reserved. The allocation takes the
// reservation's place once the view sees it; the pod's deletion, the
// allocation's, or the reservation's age frees them.
var ErrAllocationKept = errors.New("its allocation is kept until the pod shows whether it is bound")

// Commit waits for the node's turn, writes the allocation and binds the
// pod. bind is the token of the reservation the containers come from
// (view.Reservation.Bind), which the allocation carries.
// On failure it removes the allocation and frees the node's turn; the
// caller releases the GPUs it reserved for the pod, unless the error is
// ErrAllocationKept. An allocation whose create got no answer may exist
// all the same: the node's turn then stays until it is known not to, or
// to be over (inflight.Gate.Lost); no binding was asked for, so the pod
// cannot run on it.
func (c *Committer) Commit(ctx context.Context, pod *corev1.Pod, node string, containers []gpuv1alpha1.ContainerAllocation, bind string) error {
	start := c.Clock.Now()
	waitCtx, cancel := ctx, context.CancelFunc(func() {})
	if c.BindWaitLimit > 0 {
		waitCtx, cancel = context.WithTimeoutCause(ctx, c.BindWaitLimit,
			fmt.Errorf("bind wait timeout of %s passed", c.BindWaitLimit))
	}
	if c.Waiting != nil {
		c.Waiting.Inc()
	}
	err := c.Gate.Acquire(waitCtx, node, pod.UID, c.BindWaitTimeout)
	cancel()
	if c.Waiting != nil {
		c.Waiting.Dec()
	}
	if c.QueueWait != nil {
		c.QueueWait.Observe(c.Clock.Since(start).Seconds())
	}
	if err != nil {
		return err
	}

	alloc, err := c.createAllocation(ctx, pod, node, containers, bind)
	if err != nil {
		if refused(err) {
			c.Gate.Release(node, pod.UID)
		} else {
			// The create may have been made: the node's turn stays with
			// whatever allocation it left, so that no second one goes
			// pending beside it (inflight.Gate.Lost says when it ends).
			c.Gate.Lost(node, pod.UID, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
		}
		return err
	}
	c.Gate.Attach(node, pod.UID, alloc.UID)
	err = c.Bind(ctx, pod, node)
	if err == nil {
		return nil
	}

	// A binding whose answer was lost (the request was cancelled, the
	// connection dropped) may have been made, or be made yet: the pod
	// decides, and while it shows neither the allocation stays.
	undoCtx, cancel := detach(ctx)
	defer cancel()
	logger := klog.FromContext(ctx)
	current, gerr := c.Kube.CoreV1().Pods(pod.Namespace).Get(undoCtx, pod.Name, metav1.GetOptions{})
	switch {
	case gerr == nil && current.UID == pod.UID && current.Spec.NodeName == node:
		logger.Info("Binding answered with an error but was made", "err", err)
		return nil
	case gerr != nil && !apierrors.IsNotFound(gerr):
		// Unknown whether the pod is bound: the allocation stays, so its
		// GPUs stay counted. A later bind of the pod replaces it; the
		// orphan sweep deletes it once the pod is gone.
		logger.Error(gerr, "Reading the pod after a failed binding; keeping its allocation")
		return fmt.Errorf("%w; %w", err, ErrAllocationKept)
	case gerr == nil && current.UID == pod.UID && !refused(err):
		// The server may still be making the binding whose answer was
		// lost: a pod read unbound now can be bound a moment later, and
		// its allocation must then be there for the device plugin. It
		// stays, and the node's turn with it, until the device plugin
		// serves it, the pod's next bind replaces it, or the pod goes.
		logger.Info("Binding's answer was lost; keeping its allocation until the pod shows the outcome", "err", err)
		return fmt.Errorf("%w; %w", err, ErrAllocationKept)
	}
	if derr := c.DeleteAllocation(undoCtx, alloc.Namespace, alloc.Name, alloc.UID); derr != nil {
		// It stays pending on the node, and so does the node's turn: its
		// deletion (the pod's next bind, the orphan sweep) or the verifier
		// ends it.
		logger.Error(derr, "Removing the allocation of a failed bind; the node's turn stays with it")
		return err
	}
	c.Gate.Release(node, pod.UID)
	return err
}

// Bind binds the pod to the node, with no allocation: for a pod that asks
// for no GPUs.
func (c *Committer) Bind(ctx context.Context, pod *corev1.Pod, node string) error {
	if err := c.Kube.CoreV1().Pods(pod.Namespace).Bind(ctx, binding(pod, node), metav1.CreateOptions{FieldManager: c.FieldManager}); err != nil {
		return fmt.Errorf("binding pod %s/%s to node %s: %w", pod.Namespace, pod.Name, node, err)
	}
	return nil
}

// binding is the pod's binding to the node, for that pod alone (its UID).
func binding(pod *corev1.Pod, node string) *corev1.Binding {
	return &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
}

// refused reports whether the API server answered a write with a refusal,
// so that nothing was written. Any other failure (the request cancelled or
// timed out, the connection dropped, an error inside the server) leaves
// unknown whether the write was made.
func refused(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	code := status.Status().Code
	return code >= http.StatusBadRequest && code < http.StatusInternalServerError && code != http.StatusRequestTimeout
}

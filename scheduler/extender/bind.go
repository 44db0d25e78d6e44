package extender

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/commit"
	"github.com/tessera-gpu/tessera/scheduler/metrics"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// ReasonFailedGPUPlacement is the reason of the event on a pod whose bind
// could not give it its GPUs.
const ReasonFailedGPUPlacement = "FailedGPUPlacement"

// Bind gives the pod its GPUs on the node the scheduler chose: it fits the
// pod again on the current view and reserves the GPUs within its
// namespace's GPU quota, waits for the node's in-flight allocation, writes
// the pod's GPUAllocation and binds the pod. Whatever fails, the GPUs and
// the allocation are given back, unless the binding may have been made
// (commit.ErrAllocationKept); a pod the quota has no room for gets
// nothing written.
func (e *Extender) Bind(ctx context.Context, args *extenderv1.ExtenderBindingArgs) (result string, err error) {
	if err := validateBinding(args); err != nil {
		return metrics.ResultInvalid, err
	}
	if !e.ready() {
		return metrics.ResultError, errNotReady
	}
	logger := klog.FromContext(ctx).WithValues("pod", klog.KRef(args.PodNamespace, args.PodName), "node", args.Node)
	ctx = klog.NewContext(ctx, logger)

	pod, err := e.pod(ctx, args)
	if err != nil {
		return resultOf(err), err
	}
	if e.FitGate != nil {
		defer func() {
			node := args.Node
			if err != nil {
				node = ""
			}
			e.FitGate.Ended(pod.UID, node)
		}()
	}
	if pod.Spec.NodeName != "" {
		return metrics.ResultInvalid, fmt.Errorf("pod %s/%s is already bound to node %s", pod.Namespace, pod.Name, pod.Spec.NodeName)
	}
	req, err := e.request(pod)
	if err != nil {
		return metrics.ResultInvalid, fmt.Errorf("pod %s/%s has an invalid GPU request: %w", pod.Namespace, pod.Name, err)
	}
	committer := e.committer()
	if len(req.Containers) == 0 {
		if err := committer.Bind(ctx, pod, args.Node); err != nil {
			return metrics.ResultError, err
		}
		return metrics.ResultSuccess, nil
	}

	// An allocation the pod already has comes from a bind that was cut
	// short (the pod is not bound): it goes before the new one is made.
	if old, ok := e.View.Pod(pod.UID); ok && old.AllocationUID != "" {
		if err := committer.CheckUnbound(ctx, pod); err != nil {
			return metrics.ResultInvalid, err
		}
		if err := committer.DeleteAllocation(ctx, old.Namespace, old.Name, old.AllocationUID); err != nil {
			return metrics.ResultError, fmt.Errorf("deleting the stale allocation of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		logger.V(2).Info("Deleted the allocation of an earlier, unfinished bind")
	}

	now := e.Clock.Now()
	var warning view.Reason
	rules := e.rules()
	reserved, err := e.View.ReserveWithin(rules.Limits(pod.Namespace), pod.UID, pod.Namespace, pod.Name, args.Node, now,
		rules.Fit(now, req.Request, "it", &warning))
	if err != nil {
		err = fmt.Errorf("pod %s/%s no longer fits node %s: %w", pod.Namespace, pod.Name, args.Node, err)
		e.event(pod, corev1.EventTypeWarning, ReasonFailedGPUPlacement, err.Error())
		return metrics.ResultUnschedulable, err
	}
	containers := reserved.Containers
	if reserved.HoldFreed != "" {
		// Should the bind fail, the gang's room comes back where the
		// reservation was, so what was freed there stays free.
		if e.Requeue != nil {
			e.Requeue.Freed(reserved.HoldFreed)
		}
		if e.FitGate != nil {
			e.FitGate.Freed(reserved.HoldFreed)
		}
	}

	if err := committer.Commit(ctx, pod, args.Node, containers, reserved.Bind); err != nil {
		if !errors.Is(err, commit.ErrAllocationKept) && e.View.ReleaseReservation(pod.UID, now) && e.QuotaRequeue != nil {
			e.QuotaRequeue.QuotaFreed(pod.Namespace)
		}
		e.event(pod, corev1.EventTypeWarning, ReasonFailedGPUPlacement, err.Error())
		return resultOf(err), err
	}
	e.View.Bound(pod.UID)
	if e.Requeue != nil {
		e.Requeue.Forget(pod.UID)
	}
	if !warning.OK() {
		e.event(pod, corev1.EventTypeWarning, view.ReasonLimitsNotEnforced, fmt.Sprintf("placed on node %s, where %s", args.Node, warning))
	}
	// The GPUAllocation is the record of what the pod got; an event per
	// bind would double the API server's writes for it.
	if logger := logger.V(2); logger.Enabled() {
		logger.Info("Bound pod with GPUs", "gpus", describe(containers))
	}
	return metrics.ResultSuccess, nil
}

// pod returns the pod the scheduler asks to bind, from the cache or else
// the API, and checks that it is the same pod (UID).
func (e *Extender) pod(ctx context.Context, args *extenderv1.ExtenderBindingArgs) (*corev1.Pod, error) {
	if pod, err := e.Pods.Pods(args.PodNamespace).Get(args.PodName); err == nil && pod.UID == args.PodUID {
		return pod, nil
	}
	pod, err := e.Kube.CoreV1().Pods(args.PodNamespace).Get(ctx, args.PodName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading pod %s/%s: %w", args.PodNamespace, args.PodName, err)
	}
	if pod.UID != args.PodUID {
		return nil, &notFoundError{fmt.Sprintf("pod %s/%s has UID %s, not %s: the pod asked for was deleted", args.PodNamespace, args.PodName, pod.UID, args.PodUID)}
	}
	return pod, nil
}

// Bounds of the binding arguments: the longest names the API allows, and
// room for any UID it makes. A longer value cannot name a real object, and
// is never echoed back or logged.
const (
	maxNameLength      = validation.DNS1123SubdomainMaxLength
	maxNamespaceLength = validation.DNS1123LabelMaxLength
	maxUIDLength       = 128
)

// validateBinding names each missing or over-long field of the binding
// arguments.
func validateBinding(args *extenderv1.ExtenderBindingArgs) error {
	var errs field.ErrorList
	for _, f := range []struct {
		name, value string
		max         int
	}{
		{"PodName", args.PodName, maxNameLength}, {"PodNamespace", args.PodNamespace, maxNamespaceLength},
		{"PodUID", string(args.PodUID), maxUIDLength}, {"Node", args.Node, maxNameLength},
	} {
		switch {
		case f.value == "":
			errs = append(errs, field.Required(field.NewPath(f.name), ""))
		case len(f.value) > f.max:
			errs = append(errs, field.TooLong(field.NewPath(f.name), nil, f.max))
		}
	}
	return errs.ToAggregate()
}

// describe words an assignment for the log, such as
// "GPU 0 (GPU-a) to main, GPU 1 (GPU-b) to main".
func describe(containers []gpuv1alpha1.ContainerAllocation) string {
	var parts []string
	for _, c := range containers {
		for _, d := range c.Devices {
			parts = append(parts, fmt.Sprintf("GPU %d (%s, %d MiB) to %s", d.Index, d.UUID, d.MemoryMiB, c.Name))
		}
	}
	return strings.Join(parts, ", ")
}

// notFoundError is a bind for a pod that does not exist.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }

// resultOf classifies a bind error for the request counter.
func resultOf(err error) string {
	var nf *notFoundError
	switch {
	case errors.As(err, &nf), errors.Is(err, commit.ErrPodGone), apierrors.IsNotFound(err), apierrors.IsInvalid(err):
		return metrics.ResultInvalid
	default:
		return metrics.ResultError
	}
}

// event records an event on the pod, if a recorder is set.
func (e *Extender) event(pod *corev1.Pod, eventType, reason, note string) {
	if e.Recorder == nil {
		return
	}
	e.Recorder.Eventf(pod, nil, eventType, reason, "Binding", "%s", note)
}

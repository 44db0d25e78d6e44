package allocator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// Allocate serves the next unserved containers of the node's in-flight
// allocation, one per container request, and records them as served (the
// allocation becomes Allocated with its last container). A request that
// cannot be served marks the allocation Failed with the reason, so that the
// extender releases its GPUs, and returns that reason to the kubelet.
func (a *Allocator) Allocate(ctx context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(req.ContainerRequests) == 0 {
		return &pluginapi.AllocateResponse{}, nil
	}
	admit, err := a.admitting(ctx)
	if err != nil {
		return nil, err
	}
	alloc, live, err := a.findInFlight(ctx, admit)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		logger := klog.LoggerWithValues(klog.FromContext(ctx), "gpuAllocation", klog.KObj(alloc))
		resp, served, complete, err := a.plan(ctx, alloc, req)
		if err == nil {
			err = a.prepareMIG(ctx, alloc, served, resp)
		}
		var pe planError
		switch {
		case errors.As(err, &pe) && !live:
			// The cache may lag the plugin's own last write: decide
			// only on what the API server holds.
			if alloc, err = a.refresh(ctx, alloc, admit); err != nil {
				return nil, err
			}
			live = true
			continue
		case errors.As(err, &pe):
			logger.Info("Allocation failed", "reason", pe.msg)
			return nil, a.fail(ctx, alloc, pe)
		case err != nil:
			return nil, status.Errorf(codes.Unavailable, "allocating GPUs of pod %s/%s: %v", alloc.Namespace, alloc.Name, err)
		}
		updated := alloc.DeepCopy()
		updated.Status.ServedContainers = append(updated.Status.ServedContainers, served...)
		updated.Status.Phase = gpuv1alpha1.AllocationPending
		if complete {
			updated.Status.Phase = gpuv1alpha1.AllocationAllocated
			updated.Status.AllocatedTime = a.now()
		}
		written, err := a.cfg.Tessera.GpuV1alpha1().GPUAllocations(alloc.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: FieldManager})
		switch {
		case err == nil:
			a.cfg.Allocations.Wrote(written)
			logger.Info("Allocated GPUs", "containers", served, "phase", updated.Status.Phase)
			return resp, nil
		case (apierrors.IsConflict(err) || apierrors.IsNotFound(err)) && attempt < maxWriteAttempts:
			// The cache was behind, or someone else wrote: read it again
			// and choose the containers anew.
			if alloc, err = a.refresh(ctx, alloc, admit); err != nil {
				return nil, err
			}
			live = true
		default:
			return nil, status.Errorf(codes.Unavailable, "recording the allocation of pod %s/%s: %v", alloc.Namespace, alloc.Name, err)
		}
	}
}

// refresh reads the allocation from the API server. When it is no longer in
// flight (served, failed or deleted since the cache saw it), the node's
// in-flight allocation is looked for on the API server instead.
func (a *Allocator) refresh(ctx context.Context, alloc *gpuv1alpha1.GPUAllocation, admit admits) (*gpuv1alpha1.GPUAllocation, error) {
	fresh, err := a.cfg.Tessera.GpuV1alpha1().GPUAllocations(alloc.Namespace).Get(ctx, alloc.Name, metav1.GetOptions{})
	switch {
	case err == nil && inFlight(fresh, a.cfg.NodeName):
		return fresh, nil
	case err == nil || apierrors.IsNotFound(err):
		return a.findInFlightLive(ctx, a.cfg.LookupTimeout, admit)
	default:
		return nil, status.Errorf(codes.Unavailable, "reading GPUAllocation %s/%s: %v", alloc.Namespace, alloc.Name, err)
	}
}

// planError is a reason the request can never be served from this
// allocation.
type planError struct {
	code codes.Code
	msg  string
}

// Error returns the reason.
func (e planError) Error() string { return e.msg }

// plan checks the request against the allocation and returns the answer,
// the containers it serves, and whether they are the last the kubelet will
// ask for. It writes nothing.
func (a *Allocator) plan(ctx context.Context, alloc *gpuv1alpha1.GPUAllocation, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, []string, bool, error) {
	pod, err := a.checkPod(ctx, alloc)
	if err != nil {
		var gone errPodGone
		if errors.As(err, &gone) {
			return nil, nil, false, planError{codes.NotFound, gone.msg}
		}
		return nil, nil, false, err
	}
	pending := unserved(alloc, a.kubeletAsks(pod))
	if len(req.ContainerRequests) > len(pending) {
		return nil, nil, false, planError{codes.InvalidArgument, fmt.Sprintf(
			"the kubelet asked for %d more GPU containers of pod %s/%s, but the scheduler placed only %d more (%d of %d already served)",
			len(req.ContainerRequests), alloc.Namespace, alloc.Name, len(pending), len(alloc.Status.ServedContainers), len(alloc.Spec.Containers))}
	}
	resp := &pluginapi.AllocateResponse{}
	var served []string
	for i, creq := range req.ContainerRequests {
		c := pending[i]
		if got, want := len(creq.DevicesIds), len(c.Devices); got != want {
			return nil, nil, false, planError{codes.InvalidArgument, fmt.Sprintf(
				"the kubelet asked for %d GPUs for container %q of pod %s/%s, but the scheduler placed %d",
				got, c.Name, alloc.Namespace, alloc.Name, want)}
		}
		for _, d := range c.Devices {
			dev, ok := a.cfg.Devices.Device(d.UUID)
			if !ok {
				return nil, nil, false, planError{codes.FailedPrecondition, fmt.Sprintf(
					"GPU %s placed for container %q of pod %s/%s is not on node %s", d.UUID, c.Name, alloc.Namespace, alloc.Name, a.cfg.NodeName)}
			}
			if !dev.Health.Healthy {
				return nil, nil, false, planError{codes.FailedPrecondition, fmt.Sprintf(
					"GPU %s placed for container %q of pod %s/%s is unhealthy: %s", d.UUID, c.Name, alloc.Namespace, alloc.Name, dev.Health.Message)}
			}
		}
		resp.ContainerResponses = append(resp.ContainerResponses, a.cfg.Response.Container(alloc.Spec.PodUID, c))
		served = append(served, c.Name)
	}
	return resp, served, len(served) == len(pending), nil
}

// unserved returns the containers not yet served that the kubelet will ask
// for, in the kubelet's order.
func unserved(alloc *gpuv1alpha1.GPUAllocation, kubeletAsks func(string) bool) []gpuv1alpha1.ContainerAllocation {
	var out []gpuv1alpha1.ContainerAllocation
	for _, c := range alloc.Spec.Containers {
		if kubeletAsks(c.Name) && !slices.Contains(alloc.Status.ServedContainers, c.Name) {
			out = append(out, c)
		}
	}
	return out
}

// fail marks the allocation Failed with the reason, retrying on conflict
// while it is still in flight, and returns the error for the kubelet.
func (a *Allocator) fail(ctx context.Context, alloc *gpuv1alpha1.GPUAllocation, pe planError) error {
	logger := klog.FromContext(ctx)
	for attempt := 1; attempt <= maxWriteAttempts; attempt++ {
		updated := alloc.DeepCopy()
		updated.Status.Phase = gpuv1alpha1.AllocationFailed
		updated.Status.Message = truncate(pe.msg, maxMessage)
		updated.Status.AllocatedTime = a.now()
		written, err := a.cfg.Tessera.GpuV1alpha1().GPUAllocations(alloc.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: FieldManager})
		if err == nil {
			a.cfg.Allocations.Wrote(written)
			break
		}
		if apierrors.IsNotFound(err) {
			break
		}
		if !apierrors.IsConflict(err) {
			logger.Error(err, "Could not mark the allocation failed", "gpuAllocation", klog.KObj(alloc))
			break
		}
		fresh, err := a.cfg.Tessera.GpuV1alpha1().GPUAllocations(alloc.Namespace).Get(ctx, alloc.Name, metav1.GetOptions{})
		if err != nil || !inFlight(fresh, a.cfg.NodeName) {
			break
		}
		alloc = fresh
	}
	return status.Error(pe.code, pe.msg)
}

func (a *Allocator) now() *metav1.Time {
	t := metav1.NewTime(a.cfg.Clock.Now().Truncate(time.Second))
	return &t
}

// maxMessage is the API's bound on an allocation's message.
const maxMessage = 1024

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

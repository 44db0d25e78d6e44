package allocator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// inFlight reports whether the allocation is for the node and not yet
// served or failed.
func inFlight(a *gpuv1alpha1.GPUAllocation, node string) bool {
	return a.Spec.NodeName == node && a.DeletionTimestamp == nil &&
		(a.Status.Phase == "" || a.Status.Phase == gpuv1alpha1.AllocationPending)
}

// admits says whether the kubelet may be allocating for an allocation's
// pod; nil admits every pod.
type admits func(*gpuv1alpha1.GPUAllocation) bool

// pick returns the in-flight allocation of the node whose pod the kubelet
// may be allocating for. There should be one; should there be more, the
// one already partly served wins, then the oldest, so that successive
// calls agree.
func pick(all []*gpuv1alpha1.GPUAllocation, node string, admit admits) (*gpuv1alpha1.GPUAllocation, int) {
	var found []*gpuv1alpha1.GPUAllocation
	for _, a := range all {
		if inFlight(a, node) && (admit == nil || admit(a)) {
			found = append(found, a)
		}
	}
	if len(found) == 0 {
		return nil, 0
	}
	slices.SortFunc(found, func(a, b *gpuv1alpha1.GPUAllocation) int {
		if sa, sb := len(a.Status.ServedContainers) > 0, len(b.Status.ServedContainers) > 0; sa != sb {
			if sa {
				return -1
			}
			return 1
		}
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return found[0], len(found)
}

// findInFlight returns a copy of the node's in-flight allocation, held
// or, when none is, from the API server for at most the lookup timeout.
// live says that the copy was read from the API server.
func (a *Allocator) findInFlight(ctx context.Context, admit admits) (alloc *gpuv1alpha1.GPUAllocation, live bool, err error) {
	if alloc = a.findInFlightHeld(ctx, admit); alloc != nil {
		return alloc, false, nil
	}
	alloc, err = a.findInFlightLive(ctx, a.cfg.LookupTimeout, admit)
	return alloc, err == nil, err
}

// findInFlightHeld returns a copy of the node's in-flight allocation among
// those held, after reading by name the allocations of the node's pods not
// read yet when none is; or nil.
func (a *Allocator) findInFlightHeld(ctx context.Context, admit admits) *gpuv1alpha1.GPUAllocation {
	found, n := pick(a.cfg.Allocations.List(), a.cfg.NodeName, admit)
	if found == nil {
		a.cfg.Allocations.Refresh(ctx)
		found, n = pick(a.cfg.Allocations.List(), a.cfg.NodeName, admit)
	}
	if found == nil {
		return nil
	}
	if n > 1 {
		klog.FromContext(ctx).Info("More than one GPUAllocation in flight on the node; serving the oldest", "count", n, "gpuAllocation", klog.KObj(found))
	}
	return found.DeepCopy()
}

// progress orders the states of one allocation's status.
func progress(a *gpuv1alpha1.GPUAllocation) int {
	if !inFlight(a, a.Spec.NodeName) {
		return len(a.Spec.Containers) + 1
	}
	return len(a.Status.ServedContainers)
}

// findInFlightLive reads the node's in-flight allocation from the API
// server, waiting at most timeout for one to appear (zero: one read).
func (a *Allocator) findInFlightLive(ctx context.Context, timeout time.Duration, admit admits) (*gpuv1alpha1.GPUAllocation, error) {
	logger := klog.FromContext(ctx)

	onNode := fields.OneTermEqualSelector("spec.nodeName", a.cfg.NodeName).String()
	var (
		found   *gpuv1alpha1.GPUAllocation
		lastErr error
	)
	read := func(ctx context.Context) (bool, error) {
		list, err := a.cfg.Tessera.GpuV1alpha1().GPUAllocations(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: onNode})
		if err != nil {
			lastErr = err
			return false, nil
		}
		items := make([]*gpuv1alpha1.GPUAllocation, 0, len(list.Items))
		for i := range list.Items {
			items = append(items, &list.Items[i])
		}
		found, _ = pick(items, a.cfg.NodeName, admit)
		return found != nil, nil
	}
	var pollErr error
	if timeout > 0 {
		pollErr = wait.PollUntilContextTimeout(ctx, a.cfg.PollInterval, timeout, true, read)
	} else {
		_, pollErr = read(ctx)
	}
	if found != nil {
		logger.V(2).Info("Found the in-flight GPUAllocation on the API server before the cache", "gpuAllocation", klog.KObj(found))
		return found.DeepCopy(), nil
	}
	if ctx.Err() != nil {
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	of := ""
	if admit != nil {
		of = " of a pod the kubelet lists"
	}
	msg := fmt.Sprintf("no pending GPUAllocation%s for node %s after waiting %s: the pod was not placed by Tessera's scheduler, or its allocation was deleted or already served",
		of, a.cfg.NodeName, timeout)
	if lastErr != nil {
		msg += fmt.Sprintf(" (last read from the API server failed: %v)", lastErr)
	} else if pollErr != nil && !wait.Interrupted(pollErr) {
		msg += fmt.Sprintf(" (%v)", pollErr)
	}
	return nil, status.Error(codes.FailedPrecondition, msg)
}

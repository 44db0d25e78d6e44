package allocator

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// KubeletPods lists the pods the kubelet holds on the node: those it has
// admitted and not yet seen end, and the one it is admitting
// (podresources.Client). An error that wraps fs.ErrNotExist says that
// nothing serves the API on the node.
type KubeletPods interface {
	Pods(ctx context.Context) (sets.Set[types.NamespacedName], error)
}

// Identify finds out how the plugin learns which pod an Allocate call
// serves, for the GPUNode to publish: PodResources when the kubelet's
// pod-resources API answers, so that any number of allocations may be in
// flight on the node; otherwise InFlight, the node's one in-flight
// allocation. The plugin calls it each time it finds the kubelet, before
// registering, so a kubelet restarted with the API turned off or on is
// followed. A socket that is there but does not answer yet is asked
// again for up to identifyWait; no socket at all is not waited for.
func (a *Allocator) Identify(ctx context.Context) gpuv1alpha1.PodIdentification {
	a.mu.Lock()
	defer a.mu.Unlock()
	logger := klog.FromContext(ctx)
	a.byPodResources = false
	if a.cfg.Kubelet == nil {
		return gpuv1alpha1.PodIdentificationInFlight
	}
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, a.cfg.PollInterval, identifyWait, true, func(ctx context.Context) (bool, error) {
		_, lastErr = a.cfg.Kubelet.Pods(ctx)
		if errors.Is(lastErr, fs.ErrNotExist) {
			return false, lastErr
		}
		return lastErr == nil, nil
	})
	if err != nil {
		logger.Info("The kubelet's pod-resources API does not answer; GPU pods are bound to the node one at a time", "err", lastErr)
		return gpuv1alpha1.PodIdentificationInFlight
	}
	a.byPodResources = true
	logger.Info("Identifying the pods the kubelet allocates for through its pod-resources API; GPU pods may be bound to the node at once")
	return gpuv1alpha1.PodIdentificationPodResources
}

// identifyWait bounds how long Identify waits for the pod-resources API.
const identifyWait = 10 * time.Second

// admitting returns which in-flight allocations the kubelet may be
// allocating for: those of the pods it lists. When the kubelet does not
// answer, any (nil) while the node has one allocation in flight; an error
// when the GPUNode says the node may have several, as guessing could hand
// one pod another's GPUs.
func (a *Allocator) admitting(ctx context.Context) (admits, error) {
	if a.cfg.Kubelet == nil {
		return nil, nil
	}
	pods, err := a.cfg.Kubelet.Pods(ctx)
	switch {
	case err != nil && a.byPodResources:
		return nil, status.Errorf(codes.Unavailable, "finding the pod the kubelet is admitting: %v", err)
	case err != nil:
		klog.FromContext(ctx).V(4).Info("Serving the node's one in-flight allocation", "err", err)
		return nil, nil
	}
	return func(alloc *gpuv1alpha1.GPUAllocation) bool {
		if !pods.Has(types.NamespacedName{Namespace: alloc.Namespace, Name: alloc.Name}) {
			return false
		}
		// A kubelet that lists ended pods too (KubeletPodResourcesListUseActivePods
		// off) lists a pod it refused before its devices were allocated.
		pod, err := a.cfg.Pods.Pods(alloc.Namespace).Get(alloc.Name)
		return err != nil || pod.UID != alloc.Spec.PodUID ||
			(pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed)
	}, nil
}

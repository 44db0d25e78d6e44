package allocator

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// errPodGone says that the allocation's pod no longer exists.
type errPodGone struct{ msg string }

// Error returns the reason.
func (e errPodGone) Error() string { return e.msg }

// checkPod returns the allocation's pod after confirming that it still
// exists and is not being deleted. The cache is trusted when it agrees;
// otherwise the API server decides.
func (a *Allocator) checkPod(ctx context.Context, alloc *gpuv1alpha1.GPUAllocation) (*corev1.Pod, error) {
	if pod, err := a.cfg.Pods.Pods(alloc.Namespace).Get(alloc.Name); err == nil && pod.UID == alloc.Spec.PodUID {
		return pod, podAlive(pod, alloc)
	}
	pod, err := a.cfg.Kube.CoreV1().Pods(alloc.Namespace).Get(ctx, alloc.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, errPodGone{fmt.Sprintf("pod %s/%s was deleted before its GPUs were allocated", alloc.Namespace, alloc.Name)}
	case err != nil:
		return nil, fmt.Errorf("reading pod %s/%s: %w", alloc.Namespace, alloc.Name, err)
	case pod.UID != alloc.Spec.PodUID:
		return nil, errPodGone{fmt.Sprintf("pod %s/%s (UID %s) was deleted before its GPUs were allocated; a pod of the same name (UID %s) replaced it",
			alloc.Namespace, alloc.Name, alloc.Spec.PodUID, pod.UID)}
	}
	return pod, podAlive(pod, alloc)
}

func podAlive(pod *corev1.Pod, alloc *gpuv1alpha1.GPUAllocation) error {
	if pod.DeletionTimestamp != nil {
		return errPodGone{fmt.Sprintf("pod %s/%s is being deleted; its GPUs are not allocated", alloc.Namespace, alloc.Name)}
	}
	return nil
}

// kubeletAsks returns whether the kubelet will call Allocate for the
// container: only for containers that ask for the plugin's count resource.
// A placed container that does not (a pod that bypassed the webhook, which
// adds the count) is never asked for, so it must not hold the allocation
// Pending. Without a pod or a resource name every container counts.
func (a *Allocator) kubeletAsks(pod *corev1.Pod) func(name string) bool {
	if pod == nil || a.cfg.ResourceName == "" {
		return func(string) bool { return true }
	}
	asks := asking(pod, a.cfg.ResourceName)
	return func(name string) bool { return asks[name] }
}

// asking returns the names of the pod's containers that ask for resource.
func asking(pod *corev1.Pod, resource corev1.ResourceName) map[string]bool {
	asks := map[string]bool{}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if q, ok := c.Resources.Limits[resource]; ok && !q.IsZero() {
				asks[c.Name] = true
			}
		}
	}
	return asks
}

// cachedPod returns the allocation's pod from the cache, or nil.
func (a *Allocator) cachedPod(alloc *gpuv1alpha1.GPUAllocation) *corev1.Pod {
	pod, err := a.cfg.Pods.Pods(alloc.Namespace).Get(alloc.Name)
	if err != nil || pod.UID != alloc.Spec.PodUID {
		return nil
	}
	return pod
}

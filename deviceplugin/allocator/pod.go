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

func (e errPodGone) Error() string { return e.msg }

// checkPod confirms that the allocation's pod still exists and is not
// being deleted. The cache is trusted when it agrees; otherwise the API
// server decides.
func (a *Allocator) checkPod(ctx context.Context, alloc *gpuv1alpha1.GPUAllocation) error {
	if pod, err := a.cfg.Pods.Pods(alloc.Namespace).Get(alloc.Name); err == nil && pod.UID == alloc.Spec.PodUID {
		return podAlive(pod, alloc)
	}
	pod, err := a.cfg.Kube.CoreV1().Pods(alloc.Namespace).Get(ctx, alloc.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return errPodGone{fmt.Sprintf("pod %s/%s was deleted before its GPUs were allocated", alloc.Namespace, alloc.Name)}
	case err != nil:
		return fmt.Errorf("reading pod %s/%s: %w", alloc.Namespace, alloc.Name, err)
	case pod.UID != alloc.Spec.PodUID:
		return errPodGone{fmt.Sprintf("pod %s/%s (UID %s) was deleted before its GPUs were allocated; a pod of the same name (UID %s) replaced it",
			alloc.Namespace, alloc.Name, alloc.Spec.PodUID, pod.UID)}
	}
	return podAlive(pod, alloc)
}

func podAlive(pod *corev1.Pod, alloc *gpuv1alpha1.GPUAllocation) error {
	if pod.DeletionTimestamp != nil {
		return errPodGone{fmt.Sprintf("pod %s/%s is being deleted; its GPUs are not allocated", alloc.Namespace, alloc.Name)}
	}
	return nil
}

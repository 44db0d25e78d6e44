package commit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// newAllocation builds the GPUAllocation for a pod: named like the pod and
// owned by it, so it goes when the pod goes, and carrying the token of
// the bind that writes it (gpuv1alpha1.BindAnnotation).
func newAllocation(pod *corev1.Pod, node string, containers []gpuv1alpha1.ContainerAllocation, bind string) *gpuv1alpha1.GPUAllocation {
	gpus := map[string]bool{}
	var indexes []int
	var memory int64
	for _, c := range containers {
		for _, d := range c.Devices {
			if !gpus[d.UUID] {
				gpus[d.UUID] = true
				indexes = append(indexes, int(d.Index))
			}
			memory += d.MemoryMiB
		}
	}
	slices.Sort(indexes)
	shown := make([]string, len(indexes))
	for i, index := range indexes {
		shown[i] = strconv.Itoa(index)
	}
	return &gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{
			Name:        pod.Name,
			Namespace:   pod.Namespace,
			Annotations: map[string]string{gpuv1alpha1.BindAnnotation: bind},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1",
				Kind:       "Pod",
				Name:       pod.Name,
				UID:        pod.UID,
				Controller: ptr.To(true),
			}},
		},
		Spec: gpuv1alpha1.GPUAllocationSpec{
			PodUID:     pod.UID,
			NodeName:   node,
			Containers: containers,
			GPUCount:   int32(len(gpus)),
			GPUIndexes: strings.Join(shown, ","),
			MemoryMiB:  memory,
		},
	}
}

// createAllocation writes the pod's GPUAllocation. It has no status yet,
// which the API server shows as Pending (the CRD's default). An
// allocation of the same name left by an earlier pod of that name, or by
// an unfinished bind of this one, is replaced; one of this pod when the
// pod turns out to be bound is not.
func (c *Committer) createAllocation(ctx context.Context, pod *corev1.Pod, node string, containers []gpuv1alpha1.ContainerAllocation, bind string) (*gpuv1alpha1.GPUAllocation, error) {
	client := c.Tessera.GpuV1alpha1().GPUAllocations(pod.Namespace)
	want := newAllocation(pod, node, containers, bind)
	created, err := client.Create(ctx, want, metav1.CreateOptions{FieldManager: c.FieldManager})
	if apierrors.IsAlreadyExists(err) {
		old, gerr := client.Get(ctx, pod.Name, metav1.GetOptions{})
		if gerr != nil && !apierrors.IsNotFound(gerr) {
			return nil, fmt.Errorf("reading the existing allocation %s/%s: %w", pod.Namespace, pod.Name, gerr)
		}
		if gerr == nil && old.Spec.PodUID == pod.UID {
			if err := c.CheckUnbound(ctx, pod); err != nil {
				return nil, err
			}
		}
		if gerr == nil {
			if derr := c.DeleteAllocation(ctx, old.Namespace, old.Name, old.UID); derr != nil {
				return nil, fmt.Errorf("replacing the existing allocation %s/%s: %w", pod.Namespace, pod.Name, derr)
			}
			klog.FromContext(ctx).V(2).Info("Deleted a stale allocation of the same name", "podUID", old.Spec.PodUID)
		}
		created, err = client.Create(ctx, want, metav1.CreateOptions{FieldManager: c.FieldManager})
	}
	if err != nil {
		return nil, fmt.Errorf("creating GPU allocation %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return created, nil
}

// DeleteAllocation deletes the allocation with the given UID; one that is
// gone already, or was replaced, is left alone.
func (c *Committer) DeleteAllocation(ctx context.Context, namespace, name string, uid types.UID) error {
	err := c.Tessera.GpuV1alpha1().GPUAllocations(namespace).Delete(ctx, name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting GPU allocation %s/%s: %w", namespace, name, err)
	}
	return nil
}

// ErrPodGone says that the pod asked for was deleted: a pod of its name
// has another UID, or none exists.
var ErrPodGone = errors.New("the pod asked for was deleted")

// CheckUnbound reads the pod from the API server before the allocation
// of an earlier bind is replaced. The cache may lag behind (its watch
// reconnecting after the API server restarted) and show unbound a pod
// that that bind did bind and whose allocation the device plugin served:
// replacing it then would record other GPUs than the ones the pod uses.
func (c *Committer) CheckUnbound(ctx context.Context, pod *corev1.Pod) error {
	live, err := c.Kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	switch {
	case err != nil:
		return fmt.Errorf("reading pod %s/%s: %w", pod.Namespace, pod.Name, err)
	case live.UID != pod.UID:
		return fmt.Errorf("pod %s/%s has UID %s, not %s: %w", pod.Namespace, pod.Name, live.UID, pod.UID, ErrPodGone)
	case live.Spec.NodeName != "":
		return fmt.Errorf("pod %s/%s is already bound to node %s", pod.Namespace, pod.Name, live.Spec.NodeName)
	}
	return nil
}

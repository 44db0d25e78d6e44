package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/tessera-gpu/tessera/test/framework"
)

// TestAllocationGarbageCollected deletes a pod and waits for
// kube-controller-manager's garbage collector to delete the GPUAllocation
// it owns.
func TestAllocationGarbageCollected(t *testing.T) {
	cp := framework.Start(t, framework.Options{ControllerManager: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	pod, err := cp.Kube.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "owner"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alloc := gpuAllocation("owner", "node-gc", pod.UID, "GPU-1", 1000)
	alloc.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
	allocations := cp.Tessera.GpuV1alpha1().GPUAllocations("default")
	if _, err := allocations.Create(ctx, alloc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := cp.Kube.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := allocations.Get(ctx, "owner", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("the GPUAllocation owned by the deleted pod was not garbage-collected: %v", err)
	}
}

package kueue

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

// serveAllocations plays the nodes' kubelets and device plugins until the
// test ends: an allocation still Pending whose pod is bound to its node is
// marked Allocated, so that the extender binds the node's next pod (one is
// in flight per node at a time).
func serveAllocations(t *testing.T, cp *framework.ControlPlane) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
	})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			serveOnce(ctx, t, cp)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
}

func serveOnce(ctx context.Context, t *testing.T, cp *framework.ControlPlane) {
	allocs, err := cp.Tessera.GpuV1alpha1().GPUAllocations(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, a := range allocs.Items {
		if a.Status.Phase != "" && a.Status.Phase != gpuv1alpha1.AllocationPending {
			continue
		}
		pod, err := cp.Kube.CoreV1().Pods(a.Namespace).Get(ctx, a.Name, metav1.GetOptions{})
		if err != nil || pod.UID != a.Spec.PodUID || pod.Spec.NodeName != a.Spec.NodeName {
			continue
		}
		a.Status.Phase = gpuv1alpha1.AllocationAllocated
		a.Status.ServedContainers = nil
		for _, c := range a.Spec.Containers {
			a.Status.ServedContainers = append(a.Status.ServedContainers, c.Name)
		}
		now := metav1.Now()
		a.Status.AllocatedTime = &now
		if _, err := cp.Tessera.GpuV1alpha1().GPUAllocations(a.Namespace).UpdateStatus(ctx, &a, metav1.UpdateOptions{FieldManager: "e2e-kubelet"}); err != nil && ctx.Err() == nil {
			t.Logf("kubelet: marking %s/%s Allocated: %v", a.Namespace, a.Name, err)
		}
	}
}

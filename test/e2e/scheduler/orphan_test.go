package scheduler

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

// testOrphan checks that the extender deletes an allocation whose pod does
// not exist, and that its GPUs are free afterwards.
func testOrphan(ctx context.Context, t *testing.T, e *env) {
	const group = "orphan"
	e.addNode(ctx, t, "orphan-1", group, 10, t4())
	orphan := &gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: "ghost", Namespace: namespace},
		Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: "no-such-pod", NodeName: "orphan-1", Containers: []gpuv1alpha1.ContainerAllocation{{
			Name: "main", Kind: gpuv1alpha1.ContainerApp, Devices: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-orphan-1-0", MemoryMiB: 15360}},
		}}},
	}
	if _, err := e.cp.Tessera.GpuV1alpha1().GPUAllocations(namespace).Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(t, 30*time.Second, "the orphaned allocation to be deleted", func() (bool, string) {
		_, err := e.cp.Tessera.GpuV1alpha1().GPUAllocations(namespace).Get(ctx, "ghost", metav1.GetOptions{})
		return apierrors.IsNotFound(err), "still there"
	})
	e.createPod(ctx, t, gpuPod("orphan-after", group, nil, ctr{name: "main", count: 1}))
	e.waitBound(ctx, t, "orphan-after")
	e.deletePod(ctx, t, "orphan-after")
}

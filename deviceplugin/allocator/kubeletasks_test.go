package allocator

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/hamicore"
)

// TestContainersTheKubeletNeverAsksForDoNotHoldTheAllocation pins that a
// placed container without the count resource (a pod that bypassed the
// webhook) is skipped, so the allocation still becomes Allocated.
func TestContainersTheKubeletNeverAsksForDoNotHoldTheAllocation(t *testing.T) {
	pod := testPod("p", "uid-p")
	pod.Spec.InitContainers = []corev1.Container{{Name: "memory-only", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpumem": resource.MustParse("1000")}}}}
	pod.Spec.Containers = []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}
	alloc := testAllocation("p", "uid-p", testNode,
		container("memory-only", gpuv1alpha1.ContainerInit, dev("GPU-a", 0, 1000, 0)),
		container("main", gpuv1alpha1.ContainerApp, dev("GPU-b", 1, 2000, 0)))
	h := newUnitHarness(t, []*corev1.Pod{pod}, []*gpuv1alpha1.GPUAllocation{alloc}, ResponseConfig{})
	h.alloc.cfg.ResourceName = "nvidia.com/gpu"

	resp, err := h.alloc.Allocate(h.ctx, request(1))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.ContainerResponses[0].Envs[hamicore.EnvVisibleDevices]; got != "GPU-b" {
		t.Errorf("served %q, want main's GPU-b", got)
	}
	got := h.stored(t, "p").Status
	if got.Phase != gpuv1alpha1.AllocationAllocated || !reflect.DeepEqual(got.ServedContainers, []string{"main"}) {
		t.Errorf("status %+v, want Allocated with main served", got)
	}
}

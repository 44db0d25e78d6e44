package kueue

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/test/framework"
)

// checkNoOvercommit fails the test when any GPU's allocations hold more
// memory, cores or shares than it has, or a bound GPU pod has no
// allocation of its own on its node.
func (e *env) checkNoOvercommit(ctx context.Context, t *testing.T) {
	t.Helper()
	nodes, err := e.cp.Tessera.GpuV1alpha1().GPUNodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	allocs, err := e.cp.Tessera.GpuV1alpha1().GPUAllocations(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]*placement.Hold{}
	byPod := map[string]*gpuv1alpha1.GPUAllocation{}
	for i := range allocs.Items {
		framework.AddGPUUse(used, &allocs.Items[i])
		byPod[allocs.Items[i].Namespace+"/"+allocs.Items[i].Name] = &allocs.Items[i]
	}
	for _, n := range nodes.Items {
		for _, d := range n.Status.Devices {
			if u := used[d.UUID]; u != nil && (u.MemoryMiB > d.MemoryMiB || u.Cores > d.Cores || u.Shares > d.ShareLimit) {
				t.Errorf("GPU %s over-committed: %+v of %d MiB, %d cores, %d shares", d.UUID, *u, d.MemoryMiB, d.Cores, d.ShareLimit)
			}
		}
	}
	pods, err := e.cp.Kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods.Items {
		if pod.Spec.NodeName == "" {
			continue
		}
		if a := byPod[pod.Namespace+"/"+pod.Name]; a == nil || a.Spec.PodUID != pod.UID || a.Spec.NodeName != pod.Spec.NodeName {
			t.Errorf("bound pod %s/%s on %s has no allocation of its own there", pod.Namespace, pod.Name, pod.Spec.NodeName)
		}
	}
}

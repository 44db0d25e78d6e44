package deviceplugin

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

const twoGPUs = `
gpus:
- {uuid: GPU-e2e-0, index: 0, model: NVIDIA A100-SXM4-40GB, memoryMiB: 40960, numaNode: 0}
- {uuid: GPU-e2e-1, index: 1, model: NVIDIA A100-SXM4-40GB, memoryMiB: 40960, numaNode: 0}
`

// TestPodsBoundAtOnceGetTheirOwnGPUs: a node whose device plugin learns
// from the kubelet's pod-resources API which pod each Allocate serves says
// so in its GPUNode, and the extender then binds GPU pods there without
// waiting for the kubelet to serve the one before. With the node's kubelet
// (the agent) holding admissions back, every pod is bound, each with its
// own allocation pending; admitted afterwards one by one, each container
// gets the GPU and the memory of its own allocation, not another's.
func TestPodsBoundAtOnceGetTheirOwnGPUs(t *testing.T) {
	const node = "gpu-node-1"
	c := startCluster(t, simNode{name: node, gpus: twoGPUs})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault)
	allocs := c.cp.Tessera.GpuV1alpha1().GPUAllocations(metav1.NamespaceDefault)

	framework.WaitFor(t, time.Minute, "the GPUNode to say its plugin asks the kubelet", func() (bool, string) {
		gn, err := c.cp.Tessera.GpuV1alpha1().GPUNodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return gn.Status.PodIdentification == gpuv1alpha1.PodIdentificationPodResources, fmt.Sprintf("podIdentification %q", gn.Status.PodIdentification)
	})

	c.agents[node].Pause()
	memory := map[string]int64{}
	for i := range 6 {
		name := fmt.Sprintf("pod-%d", i)
		memory[name] = int64(5000 + 1000*i)
		if _, err := pods.Create(ctx, gpuPod(name, memory[name]), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	framework.WaitFor(t, time.Minute, "every pod to be bound before the kubelet admits any", func() (bool, string) {
		bound, pending := 0, 0
		for name := range memory {
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if p.Spec.NodeName == node {
				bound++
			}
			if a, err := allocs.Get(ctx, name, metav1.GetOptions{}); err == nil && (a.Status.Phase == "" || a.Status.Phase == gpuv1alpha1.AllocationPending) {
				pending++
			}
		}
		return bound == len(memory) && pending == len(memory), fmt.Sprintf("%d bound, %d allocations pending", bound, pending)
	})

	c.agents[node].Resume()
	for name, mib := range memory {
		var pod *corev1.Pod
		framework.WaitFor(t, time.Minute, "pod "+name+" to run", func() (bool, string) {
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			pod = p
			return p.Status.Phase == corev1.PodRunning, fmt.Sprintf("phase %s: %s %s", p.Status.Phase, p.Status.Reason, p.Status.Message)
		})
		a, err := allocs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if a.Status.Phase != gpuv1alpha1.AllocationAllocated || len(a.Spec.Containers) != 1 || len(a.Spec.Containers[0].Devices) != 1 {
			t.Fatalf("allocation of %s: %+v, want Allocated with one GPU", name, a)
		}
		want := a.Spec.Containers[0].Devices[0]
		results := c.agents[node].Results(pod.UID)
		if len(results) != 1 {
			t.Fatalf("node agent recorded %d container results for %s, want 1", len(results), name)
		}
		env := results[0].Response.Envs
		if env["NVIDIA_VISIBLE_DEVICES"] != want.UUID || env["CUDA_DEVICE_MEMORY_LIMIT_0"] != fmt.Sprintf("%dm", mib) || want.MemoryMiB != mib {
			t.Errorf("container of %s got %s with %s, want its allocation's %s with %d MiB", name,
				env["NVIDIA_VISIBLE_DEVICES"], env["CUDA_DEVICE_MEMORY_LIMIT_0"], want.UUID, mib)
		}
	}
}

package deviceplugin

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

const oneGPU = `
gpus:
- {uuid: GPU-e2e-0, index: 0, model: NVIDIA A100-SXM4-40GB, memoryMiB: 40960, numaNode: 0}
`

func quantity(n int64) resource.Quantity { return *resource.NewQuantity(n, resource.DecimalSI) }

// TestBoundPodsAreAllocatedAndTheNextPodFollows binds a pod, lets the node
// agent admit it through the device plugin, and checks that the plugin's
// Allocated allocation lets the extender place the next pod on the same
// GPU; a pod that does not fit waits until the first pod is deleted, and
// the extender's requeue then gets it placed.
func TestBoundPodsAreAllocatedAndTheNextPodFollows(t *testing.T) {
	c := startCluster(t, simNode{name: "gpu-node-1", gpus: oneGPU})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault)
	allocs := c.cp.Tessera.GpuV1alpha1().GPUAllocations(metav1.NamespaceDefault)

	running := func(name string, memoryMiB int64) *corev1.Pod {
		t.Helper()
		var pod *corev1.Pod
		framework.WaitFor(t, time.Minute, "pod "+name+" to run", func() (bool, string) {
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			pod = p
			return p.Status.Phase == corev1.PodRunning, fmt.Sprintf("phase %s on %q: %s %s", p.Status.Phase, p.Spec.NodeName, p.Status.Reason, p.Status.Message)
		})
		a, err := allocs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if a.Status.Phase != gpuv1alpha1.AllocationAllocated || a.Status.AllocatedTime == nil || len(a.Status.ServedContainers) != 1 {
			t.Errorf("allocation of %s: %+v, want Allocated by the device plugin", name, a.Status)
		}
		results := c.agents["gpu-node-1"].Results(pod.UID)
		if len(results) != 1 {
			t.Fatalf("node agent recorded %d container results for %s, want 1", len(results), name)
		}
		env := results[0].Response.Envs
		if env["NVIDIA_VISIBLE_DEVICES"] != "GPU-e2e-0" || env["CUDA_DEVICE_MEMORY_LIMIT_0"] != fmt.Sprintf("%dm", memoryMiB) {
			t.Errorf("container of %s got %v, want GPU-e2e-0 with %d MiB", name, env, memoryMiB)
		}
		return pod
	}

	if _, err := pods.Create(ctx, gpuPod("first", 30000), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := running("first", 30000)
	if first.Spec.NodeName != "gpu-node-1" {
		t.Fatalf("first pod on %q", first.Spec.NodeName)
	}

	// The node's one allocation is served, so the extender lets the next
	// pod onto the same GPU.
	if _, err := pods.Create(ctx, gpuPod("second", 8000), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running("second", 8000)

	// 30000 + 8000 + 8000 MiB exceed the GPU's 40960: the third waits.
	if _, err := pods.Create(ctx, gpuPod("third", 8000), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(t, time.Minute, "the third pod to be found unschedulable", func() (bool, string) {
		p, err := pods.Get(ctx, "third", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				return p.Spec.NodeName == "", cond.Message
			}
		}
		return false, fmt.Sprintf("conditions %v", p.Status.Conditions)
	})

	// Deleting the first pod frees its memory; the third then runs.
	if err := pods.Delete(ctx, "first", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	running("third", 8000)
}

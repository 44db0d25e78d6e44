package deviceplugin

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu/simulated"
	"github.com/tessera-gpu/tessera/test/framework"
)

// dynamicMIGGPU is an A100 80GB in MIG mode with no instances, which the
// plugin cuts on demand.
const dynamicMIGGPU = `
gpus:
- uuid: GPU-dyn-0
  model: NVIDIA A100-SXM4-80GB
  memoryMiB: 81920
  migGeometry:
    profiles:
    - {name: 1g.10gb, profileID: 19, memoryMiB: 9856, computePercent: 14, placements: [{start: 0, size: 1}, {start: 1, size: 1}, {start: 2, size: 1}, {start: 3, size: 1}, {start: 4, size: 1}, {start: 5, size: 1}, {start: 6, size: 1}]}
    - {name: 2g.20gb, profileID: 14, memoryMiB: 19968, computePercent: 29, placements: [{start: 0, size: 2}, {start: 2, size: 2}, {start: 4, size: 2}]}
    - {name: 7g.80gb, profileID: 0, memoryMiB: 80896, computePercent: 100, placements: [{start: 0, size: 8}]}
`

// TestDynamicMIGInstancesMadeAndDestroyed runs pods in HAMi's MIG mode on
// a GPU whose instances the device plugin makes on demand, through the
// extender, the device plugin and the node agent: each container gets an
// instance of the smallest profile that holds its memory, made at
// Allocate where the scheduler placed it and handed to it by its own
// UUID; an instance left by an earlier daemon is gone; and a pod's
// instance is destroyed when the pod ends.
func TestDynamicMIGInstancesMadeAndDestroyed(t *testing.T) {
	var gpuFile string
	c := startCluster(t, simNode{name: "mig-node", gpus: dynamicMIGGPU, dynamicMIG: true, gpuFile: &gpuFile})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	instances := simulated.New(gpuFile, time.Hour, testingclock.NewFakeClock(time.Now()), true)
	if _, err := instances.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	// A daemon that stopped left a 7g.80gb instance over every slice.
	if _, err := instances.CreateMIG(ctx, "GPU-dyn-0", 0, gpuv1alpha1.MIGPlacement{Start: 0, Size: 8}); err != nil {
		t.Fatal(err)
	}
	pods := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault)
	if _, err := pods.Create(ctx, migPod("small", 8000), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	smallUUID := c.waitMIGRunning(ctx, t, "small", "1g.10gb", 0)
	if _, err := pods.Create(ctx, migPod("medium", 15000), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mediumUUID := c.waitMIGRunning(ctx, t, "medium", "2g.20gb", 2)
	waitInstances(ctx, t, instances, smallUUID, mediumUUID)

	if err := pods.Delete(ctx, "small", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	waitInstances(ctx, t, instances, mediumUUID)
}

// migPod is a pod in HAMi's MIG mode asking for one GPU with memory.
func migPod(name string, memoryMiB int64) *corev1.Pod {
	p := gpuPod(name, memoryMiB)
	p.Annotations = map[string]string{"nvidia.com/vgpu-mode": "mig"}
	return p
}

// waitMIGRunning waits for the pod to run and checks that it was placed
// an instance of the profile at the slice, and given that instance.
func (c *cluster) waitMIGRunning(ctx context.Context, t *testing.T, name, profile string, start int32) string {
	t.Helper()
	var pod *corev1.Pod
	framework.WaitFor(t, time.Minute, "pod "+name+" to run", func() (bool, string) {
		p, err := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pod = p
		return p.Status.Phase == corev1.PodRunning, fmt.Sprintf("phase %s on %q: %v", p.Status.Phase, p.Spec.NodeName, p.Status.Conditions)
	})
	a, err := c.cp.Tessera.GpuV1alpha1().GPUAllocations(metav1.NamespaceDefault).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := a.Spec.Containers[0].Devices[0]
	if d.UUID != "GPU-dyn-0" || d.MIG == nil || d.MIG.Profile != profile || d.MIG.Placement.Start != start {
		t.Fatalf("pod %s was placed %+v (MIG %+v), want a %s instance at slice %d of GPU-dyn-0", name, d, d.MIG, profile, start)
	}
	results := c.agents["mig-node"].Results(pod.UID)
	if len(results) != 1 {
		t.Fatalf("node agent recorded %d container results for %s, want 1", len(results), name)
	}
	envs := results[0].Response.Envs
	got := envs["NVIDIA_VISIBLE_DEVICES"]
	if got == "" || got == "GPU-dyn-0" {
		t.Fatalf("pod %s was given %q, want its MIG instance's UUID", name, got)
	}
	// The instance is the container's whole: no compute limit inside it,
	// as in DRA mode.
	if sm := envs["CUDA_DEVICE_SM_LIMIT"]; sm != "100" {
		t.Errorf("pod %s was given CUDA_DEVICE_SM_LIMIT=%q inside its %s instance, want 100", name, sm, profile)
	}
	return got
}

// waitInstances waits until the GPU's instances are exactly those with
// the UUIDs.
func waitInstances(ctx context.Context, t *testing.T, b gpu.MIGMaker, uuids ...string) {
	t.Helper()
	framework.WaitFor(t, time.Minute, fmt.Sprintf("the MIG instances to be %v", uuids), func() (bool, string) {
		made, err := b.MIGInstances(ctx, "GPU-dyn-0")
		if err != nil {
			return false, err.Error()
		}
		var have []string
		for _, m := range made {
			have = append(have, m.UUID)
		}
		if len(have) != len(uuids) {
			return false, fmt.Sprintf("instances %v", made)
		}
		for _, u := range uuids {
			found := false
			for _, h := range have {
				found = found || h == u
			}
			if !found {
				return false, fmt.Sprintf("instances %v", made)
			}
		}
		return true, ""
	})
}

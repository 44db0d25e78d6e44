package dra

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

const oneH100 = `
gpus:
- {uuid: GPU-solo-0, index: 0, model: NVIDIA H100 80GB HBM3, memoryMiB: 81920, numaNode: 0}
`

// TestTwoClaimsShareOneGPU is the sharing scenario with stock
// kube-scheduler: two pods with 30 GiB claims share one 80 GiB GPU, a
// third waits Pending with kube-scheduler's reason until one of them goes,
// and at no time does the GPU hold more than it has.
func TestTwoClaimsShareOneGPU(t *testing.T) {
	c := startCluster(t, &simNode{name: "solo", gpus: oneH100})
	stop := c.watchCapacity()
	c.claimTemplate("mem30", resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
		gpuRequest("gpu", 1, map[resourceapi.QualifiedName]string{gpuv1alpha1.DRACapacityMemory: "30Gi"}),
	}})

	for _, name := range []string{"p1", "p2"} {
		c.createPod(claimPod(name, "solo", "mem30", map[string]string{"cuda": ""}))
	}
	for _, name := range []string{"p1", "p2"} {
		pod := c.waitRunning(name)
		env := c.containerEnv(pod)["cuda"]
		for _, want := range []string{"NVIDIA_VISIBLE_DEVICES=GPU-solo-0", "CUDA_DEVICE_MEMORY_LIMIT_0=30720m", "CUDA_DEVICE_SM_LIMIT=0"} {
			if !slices.Contains(env, want) {
				t.Errorf("pod %s: container env %v lacks %s", name, env, want)
			}
		}
	}

	c.createPod(claimPod("p3", "solo", "mem30", map[string]string{"cuda": ""}))
	framework.WaitFor(t, time.Minute, "p3 to be unschedulable", func() (bool, string) {
		pod, err := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Get(c.ctx, "p3", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				return strings.Contains(cond.Message, "cannot allocate all claims"), cond.Message
			}
		}
		return false, fmt.Sprintf("conditions %v, node %q", pod.Status.Conditions, pod.Spec.NodeName)
	})

	p1, err := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Get(c.ctx, "p1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p1Claim := *p1.Status.ResourceClaimStatuses[0].ResourceClaimName
	if err := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Delete(c.ctx, "p1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitRunning("p3")
	framework.WaitFor(t, time.Minute, "p1's claim to be deleted and its CDI spec removed", func() (bool, string) {
		_, err := c.cp.Kube.ResourceV1().ResourceClaims(metav1.NamespaceDefault).Get(c.ctx, p1Claim, metav1.GetOptions{})
		specs := c.specFiles("solo")
		return err != nil && len(specs) == 2, fmt.Sprintf("claim: %v; spec files %v", err, specs)
	})
	if violations := stop(); len(violations) > 0 {
		t.Errorf("the GPU held more than it has: %v", violations)
	}
}

// watchCapacity checks, until the returned function is called, that the
// allocated claims never consume more of a device than its slice offers.
// The function returns every violation seen.
func (c *cluster) watchCapacity() func() []string {
	var (
		mu         sync.Mutex
		violations []string
	)
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if v := c.overCapacity(); len(v) > 0 {
				mu.Lock()
				violations = append(violations, v...)
				mu.Unlock()
			}
		}
	}()
	return func() []string {
		close(done)
		<-stopped
		if v := c.overCapacity(); len(v) > 0 {
			violations = append(violations, v...)
		}
		return violations
	}
}

// overCapacity reads the slices and claims and names every device whose
// allocated claims consume more than its slice offers.
func (c *cluster) overCapacity() []string {
	slices, err := c.cp.Kube.ResourceV1().ResourceSlices().List(c.ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	claims, err := c.cp.Kube.ResourceV1().ResourceClaims("").List(c.ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	return framework.OverCapacity(slices.Items, claims.Items)
}

// specFiles lists the node's CDI spec files.
func (c *cluster) specFiles(node string) []string {
	entries, _ := filepathGlob(c.nodes[node].cdiDir)
	return entries
}

package dra

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

// highNeverPreempts is a high priority that may not preempt.
const highNeverPreempts = "dra-high-never-preempts"

// twoH100On is a node with two 80 GiB GPUs, four shares each.
func twoH100On(node string) string {
	return fmt.Sprintf(`
gpus:
- {uuid: GPU-%[1]s-0, index: 0, model: NVIDIA H100 80GB HBM3, memoryMiB: 81920, numaNode: 0}
- {uuid: GPU-%[1]s-1, index: 1, model: NVIDIA H100 80GB HBM3, memoryMiB: 81920, numaNode: 0}
`, node)
}

// TestDRAFitGate runs tessera-scheduler with the shipped DRA
// configuration over one node of two 80 GiB GPUs, each filled to 10 GiB
// free, and holds dozens of pods whose 20 GiB claims no GPU has room for:
// each is told why in plugin mode's words, parked outside kube-scheduler's
// queue and never tried, and left parked by tessera-scheduler restarting; a pod
// that fits is placed past them; a high-priority pod that may not
// preempt is held too; and freeing one GPU releases exactly the pods its
// room holds, the high-priority pod first and then the oldest.
func TestDRAFitGate(t *testing.T) {
	const node, held = "gate-1", 40
	c := startTesseraScheduler(t, &simNode{name: node, gpus: twoH100On(node)})
	c.createHighNeverPreempts()
	for name, memory := range map[string]string{"mem70": "70Gi", "mem20": "20Gi", "mem5": "5Gi"} {
		c.claimTemplate(name, resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
			gpuRequest("gpu", 1, map[resourceapi.QualifiedName]string{gpuv1alpha1.DRACapacityMemory: memory}),
		}})
	}
	// The allocator takes the first GPU that fits: one filler on each.
	c.waitRunningCreated(claimPod("filler-0", node, "mem70", map[string]string{"cuda": ""}))
	c.waitRunningCreated(claimPod("filler-1", node, "mem70", map[string]string{"cuda": ""}))
	for i := range held {
		pod := claimPod(fmt.Sprintf("held-%02d", i), node, "mem20", map[string]string{"cuda": ""})
		pod.Labels = map[string]string{framework.HeldLabel: "true"}
		c.createPod(pod)
	}
	want := framework.HeldPrefix + "no GPU has 20480 MiB free; the largest free is 10240 MiB on " + node
	c.held().WaitHeld(c.ctx, t, 3*time.Minute, held, want)
	c.held().WaitParked(c.ctx, t, time.Minute, held)
	// A scheduler that starts again judges the parked pods anew and
	// leaves them parked: their GPUs have not freed.
	c.restartScheduler()
	time.Sleep(5 * time.Second)
	if parked := c.held().Parked(c.ctx, t); parked != held {
		t.Errorf("after a restart %d pods are parked, want %d", parked, held)
	}

	c.waitRunningCreated(claimPod("fits", node, "mem5", map[string]string{"cuda": ""}))
	high := claimPod("high", node, "mem20", map[string]string{"cuda": ""})
	high.Spec.PriorityClassName = highNeverPreempts
	c.createPod(high)
	c.waitPodHeld("high", want)

	// The freed GPU has room for four 20 GiB claims: the high-priority
	// pod's and the three oldest held pods'.
	first := c.held().First(c.ctx, t, 3)
	if err := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Delete(c.ctx, "filler-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitRunning("high")
	for _, name := range first {
		c.waitRunning(name)
	}
	c.held().CheckUnbound(c.ctx, t, held-len(first))
	if parked := c.held().Parked(c.ctx, t); parked != held-len(first) {
		t.Errorf("%d pods are parked, want the %d still held", parked, held-len(first))
	}
	c.held().CheckNeverTried(c.ctx, t)
}

// createHighNeverPreempts creates the high priority that may not preempt.
func (c *cluster) createHighNeverPreempts() {
	c.t.Helper()
	_, err := c.cp.Kube.SchedulingV1().PriorityClasses().Create(c.ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: highNeverPreempts}, Value: 1000, PreemptionPolicy: ptr.To(corev1.PreemptNever),
	}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
}

// held are the pods labelled as expected held.
func (c *cluster) held() framework.HeldPods {
	return framework.HeldPods{Kube: c.cp.Kube, Namespace: metav1.NamespaceDefault}
}

// waitPodHeld waits until the pod is told it is held for want.
func (c *cluster) waitPodHeld(name, want string) {
	c.t.Helper()
	framework.WaitFor(c.t, time.Minute, name+" held", func() (bool, string) {
		pod, err := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Get(c.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return framework.HeldWhy(pod) == want && pod.Spec.NodeName == "", fmt.Sprintf("node %q, conditions %v", pod.Spec.NodeName, pod.Status.Conditions)
	})
}

// roomFor reports whether some device of the slices, with what the
// allocated claims consume, has a share and memory free for a claim
// asking for memory (all of a GPU's when empty), and names it.
func (c *cluster) roomFor(memory string) (bool, string) {
	c.t.Helper()
	slices, err := c.cp.Kube.ResourceV1().ResourceSlices().List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	claims, err := c.cp.Kube.ResourceV1().ResourceClaims("").List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	capacity, used := framework.DeviceUse(slices.Items, claims.Items)
	for key, have := range capacity {
		free := have[gpuv1alpha1.DRACapacityMemory]
		free.Sub(used[key][gpuv1alpha1.DRACapacityMemory])
		shares := have[gpuv1alpha1.DRACapacityShares]
		shares.Sub(used[key][gpuv1alpha1.DRACapacityShares])
		asked := have[gpuv1alpha1.DRACapacityMemory]
		if memory != "" {
			asked = resource.MustParse(memory)
		}
		if shares.Sign() > 0 && free.Cmp(asked) >= 0 {
			return true, fmt.Sprintf("%s has %s free and %s shares", key, &free, &shares)
		}
	}
	return false, ""
}

package dra

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu/simulated"
	"github.com/tessera-gpu/tessera/test/fixtures"
	"github.com/tessera-gpu/tessera/test/framework"
)

// TestDynamicMIGPlacement runs HAMi's MIG-mode pods through the webhook
// in DRA mode, stock kube-scheduler and the node daemon's DRA driver with
// dynamicMIG, on the GPU and in the order of the extender and plugin
// mode test of the same name, and expects the same answers: each pod
// gets the smallest profile that holds its memory at the first free run
// of slices (1g.10gb at 0, 3g.40gb at 4, 2g.20gb at 2), its instance is
// made when the kubelet prepares its claim and handed to its container
// whole, by its own UUID; a pod in hami-core mode or naming no mode is
// not placed there; one that finds no room waits, and when a pod is
// deleted its instance is destroyed and the waiting pod gets its room.
// No two instances ever overlap; an instance no prepared claim holds is
// destroyed, and a restarted daemon keeps those that claims hold. It runs
// under stock kube-scheduler and under tessera-scheduler with the shipped
// DRA configuration, which also says why a pod is refused the GPU in the
// words of the other modes.
func TestDynamicMIGPlacement(t *testing.T) {
	for _, scheduler := range []struct {
		name  string
		start func(*testing.T, ...*simNode) *cluster
		// words: the scheduler says why a pod is refused the GPU in the
		// words of the other modes.
		words bool
	}{
		{"stock kube-scheduler", startCluster, false},
		{"tessera-scheduler", startTesseraScheduler, true},
	} {
		t.Run(scheduler.name, func(t *testing.T) {
			n := &simNode{name: "dynmig", gpus: fixtures.DynamicMIGGPUFile("GPU-dyn-0"), dynamicMIG: true}
			c := scheduler.start(t, n)
			c.startWebhook()
			dynamicMIGPlacement(t, c, n, scheduler.words)
		})
	}
}

// dynamicMIGPlacement is TestDynamicMIGPlacement on the cluster c, whose
// node n has the GPU.
func dynamicMIGPlacement(t *testing.T, c *cluster, n *simNode, words bool) {
	instances := simulated.New(n.gpuFile, time.Hour, testingclock.NewFakeClock(time.Now()), true)
	if _, err := instances.Discover(c.ctx); err != nil {
		t.Fatal(err)
	}
	// A daemon that stopped left a 7g.80gb instance over every slice; no
	// prepared claim holds it.
	if _, err := instances.CreateMIG(c.ctx, "GPU-dyn-0", 0, gpuv1alpha1.MIGPlacement{Start: 0, Size: 8}); err != nil {
		t.Fatal(err)
	}
	waitMIGInstances(c, instances, 0)

	hamiMIG := map[string]string{"nvidia.com/vgpu-mode": "mig"}
	pods := map[string]*corev1.Pod{}
	for _, tc := range []struct {
		name, memory, device string
	}{
		{"small", "8000", "gpu-0-1g-10gb-at-0"},
		{"large", "30000", "gpu-0-3g-40gb-at-4"},
		{"medium", "15000", "gpu-0-2g-20gb-at-2"},
	} {
		pods[tc.name] = c.waitRunningCreated(hamiPod(tc.name, hamiMIG, "nvidia.com/gpu", "1", "nvidia.com/gpumem", tc.memory))
		c.checkInstance(instances, pods[tc.name], tc.device)
	}
	// A restarted daemon, asked to prepare a claim again, hands out the
	// instance it made before and keeps those of the claims it prepared.
	got := c.restartAndPrepareAgain("dynmig", pods["small"])
	if got == nil || got.Error != "" || !slices.Equal(got.Devices[0].CdiDeviceIds, c.agents["dynmig"].Results(pods["small"].UID)[0].CDIDevices) {
		t.Errorf("after the restart Prepare answered %v, before %v", got, c.agents["dynmig"].Results(pods["small"].UID))
	}
	c.checkInstance(instances, pods["small"], "gpu-0-1g-10gb-at-0")
	c.createPod(hamiPod("shared", map[string]string{"nvidia.com/vgpu-mode": "hami-core"}, "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"))
	c.createPod(hamiPod("plain", nil, "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"))
	if words {
		c.waitRefused("shared", "1 type mismatch")
		c.waitRefused("plain", "in MIG mode, and the pod does not ask for MIG")
	} else {
		c.waitUnschedulable("shared", "a pod in hami-core mode not to be placed on the GPU")
		c.waitUnschedulable("plain", "a pod that names no mode not to be placed on the GPU")
	}
	c.createPod(hamiPod("no-room", hamiMIG, "nvidia.com/gpu", "1", "nvidia.com/gpumem", "30000"))
	c.waitUnschedulable("no-room", "a pod with no room for its instance to wait")
	waitMIGInstances(c, instances, 3)

	if err := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Delete(c.ctx, "large", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	pod := c.waitRunning("no-room")
	c.checkInstance(instances, pod, "gpu-0-3g-40gb-at-4")
	waitMIGInstances(c, instances, 3)
}

// checkInstance checks that the pod's claim was allocated the device, and
// that its container was given the instance made for it, whole.
func (c *cluster) checkInstance(instances gpu.MIGMaker, pod *corev1.Pod, device string) {
	c.t.Helper()
	claim, err := c.cp.Kube.ResourceV1().ResourceClaims(pod.Namespace).Get(c.ctx, *pod.Status.ResourceClaimStatuses[0].ResourceClaimName, metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	results := claim.Status.Allocation.Devices.Results
	if len(results) != 1 || results[0].Device != device {
		c.t.Fatalf("pod %s was allocated %+v, want %s", pod.Name, results, device)
	}
	made, err := instances.MIGInstances(c.ctx, "GPU-dyn-0")
	if err != nil {
		c.t.Fatal(err)
	}
	env := c.containerEnv(pod)["cuda"]
	visible := visibleDevices(env)
	k := slices.IndexFunc(made, func(m gpu.MadeMIG) bool { return m.UUID == visible })
	if k < 0 || fmt.Sprintf("gpu-0-%s-at-%d", profileName(made[k].ProfileID), made[k].Placement.Start) != device {
		c.t.Errorf("pod %s sees %q (env %v) among the instances %+v, want its %s instance", pod.Name, visible, env, made, device)
	}
}

// profileName is fixtures.A100MIGGeometry's profile of the NVML profile ID, as a device
// name writes it.
func profileName(id int32) string {
	return map[int32]string{19: "1g-10gb", 14: "2g-20gb", 9: "3g-40gb", 0: "7g-80gb"}[id]
}

// waitMIGInstances waits until the GPU holds exactly n instances, none
// overlapping another.
func waitMIGInstances(c *cluster, instances gpu.MIGMaker, n int) {
	c.t.Helper()
	framework.WaitFor(c.t, time.Minute, fmt.Sprintf("%d MIG instances on the GPU", n), func() (bool, string) {
		made, err := instances.MIGInstances(c.ctx, "GPU-dyn-0")
		if err != nil {
			return false, err.Error()
		}
		var taken uint16
		for _, m := range made {
			if taken&m.Placement.Slices() != 0 {
				c.t.Fatalf("MIG instances overlap: %+v", made)
			}
			taken |= m.Placement.Slices()
		}
		return len(made) == n, fmt.Sprintf("instances %+v", made)
	})
}

package dra

import (
	"slices"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tessera-gpu/tessera/test/framework"
)

// migLayout is an A100 in MIG mode with the instances given.
func migLayout(instances string) string {
	return "gpus:\n- {uuid: GPU-mig-0, index: 0, model: NVIDIA A100-SXM4-80GB, memoryMiB: 81920, migInstances: [" + instances + "]}\n"
}

// TestSlicesFollowTheMIGLayout recuts a GPU's MIG instances while the
// node daemon runs, as an administrator does with nvidia-smi, and expects
// the ResourceSlice to be published again with the new instances, and the
// GPUNode to say which instance's capability devices could not be read,
// naming the file.
func TestSlicesFollowTheMIGLayout(t *testing.T) {
	c := startCluster(t, &simNode{name: "mig", gpus: migLayout("{uuid: MIG-big, profile: 7g.80gb, memoryMiB: 80896, gpuInstanceID: 0}")})
	c.waitSlice("mig", "the first layout", func(d []resourceapi.Device) bool {
		return slices.Equal(deviceNames(d), []string{"gpu-0-mig-0-0"})
	})

	writeGPUs(t, c.nodes["mig"], migLayout("{uuid: MIG-a, profile: 3g.40gb, memoryMiB: 40192, gpuInstanceID: 2}, "+
		"{uuid: MIG-b, profile: 1g.10gb, memoryMiB: 9856, gpuInstanceID: 9, capabilityError: permission denied}"))
	c.waitSlice("mig", "the new layout", func(d []resourceapi.Device) bool {
		names := deviceNames(d)
		slices.Sort(names)
		return slices.Equal(names, []string{"gpu-0-mig-2-0", "gpu-0-mig-9-0"})
	})
	framework.WaitFor(t, time.Minute, "the GPUNode to report MIG-b's capability problem", func() (bool, string) {
		gn, err := c.cp.Tessera.GpuV1alpha1().GPUNodes().Get(c.ctx, "mig", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var problems []string
		for _, d := range gn.Status.Devices {
			if d.MIG != nil && d.MIG.CapabilityProblem != "" {
				problems = append(problems, d.UUID+": "+d.MIG.CapabilityProblem)
			}
		}
		return len(problems) == 1 && strings.HasPrefix(problems[0], "MIG-b: ") &&
			strings.Contains(problems[0], "/proc/driver/nvidia-caps/mig-minors: permission denied"), strings.Join(problems, "; ")
	})
}

// TestNVIDIAMIGNameOnDRANodes runs a pod written for the NVIDIA device
// plugin's mixed strategy, as HAMi's MIG example is, through the webhook
// in DRA mode, stock kube-scheduler and the node daemon's DRA driver: a
// pod asking for nvidia.com/mig-3g.20gb: 1 lands on the node whose GPU has
// that instance and its container sees exactly that instance; a pod
// asking for a profile no GPU is is warned so at creation, naming the
// resource it wrote, and stays unschedulable; one asking for two
// instances in a container is refused at creation, naming the resource. A
// pod in HAMi's MIG mode gets a free instance that holds its memory,
// whole, and is refused two GPUs, as in extender mode.
func TestNVIDIAMIGNameOnDRANodes(t *testing.T) {
	const a100in3g = "gpus:\n- {uuid: GPU-mig-0, index: 0, model: NVIDIA A100-SXM4-40GB, memoryMiB: 40960, migInstances: [" +
		"{uuid: MIG-3g, profile: 3g.20gb, memoryMiB: 19968, gpuInstanceID: 2}, {uuid: MIG-1g, profile: 1g.5gb, memoryMiB: 4864, gpuInstanceID: 9}]}\n"
	c := startCluster(t, &simNode{name: "a100", gpus: threeA100}, &simNode{name: "mig", gpus: a100in3g})
	c.startWebhook()

	pod := c.waitRunningCreated(hamiPod("mig-3g", nil, "nvidia.com/mig-3g.20gb", "1"))
	if pod.Spec.NodeName != "mig" {
		t.Errorf("the pod asking for a 3g.20gb instance runs on %s", pod.Spec.NodeName)
	}
	if visible := visibleDevices(c.containerEnv(pod)["cuda"]); visible != "MIG-3g" {
		t.Errorf("visible devices %q, want the 3g.20gb instance MIG-3g alone", visible)
	}
	for name := range pod.Spec.Containers[0].Resources.Limits {
		if strings.HasPrefix(string(name), "nvidia.com/") {
			t.Errorf("the running pod still asks for %s", name)
		}
	}

	// HAMi's dynamic MIG example asks for MIG by memory: one GPU gets the
	// free instance that holds it, whole, never a memory limit inside it;
	// two are refused, as in extender and plugin mode.
	hamiMIG := map[string]string{"nvidia.com/vgpu-mode": "mig"}
	byMemory := c.waitRunningCreated(hamiPod("mig-by-memory", hamiMIG, "nvidia.com/gpu", "1", "nvidia.com/gpumem", "4000"))
	env := c.containerEnv(byMemory)["cuda"]
	if visible := visibleDevices(env); visible != "MIG-1g" || !slices.Contains(env, "CUDA_DEVICE_MEMORY_LIMIT_0=4864m") {
		t.Errorf("the pod asking for 4000 MiB in MIG mode sees %q with env %v, want the 1g.5gb instance MIG-1g whole (4864m)", visible, env)
	}
	_, err := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Create(c.ctx, hamiPod("mig-two-by-memory", hamiMIG, "nvidia.com/gpu", "2", "nvidia.com/gpumem", "8000"), metav1.CreateOptions{})
	if want := "spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: 2: must be 1, since the pod asks for MIG instances only (nvidia.com/vgpu-mode)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("creating HAMi's dynamic MIG example: %v, want a refusal saying %q", err, want)
	}

	kube, warnings := c.cp.ClientWithWarnings(t)
	if _, err := kube.CoreV1().Pods(metav1.NamespaceDefault).Create(c.ctx, hamiPod("mig-2g", nil, "nvidia.com/mig-2g.10gb", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(warnings.Take(), " | "); !strings.Contains(got, "the pod asks for nvidia.com/mig-2g.10gb, but no GPU in the cluster is a 2g.10gb MIG instance now") {
		t.Errorf("creating a pod asking for a profile no GPU is warned %q, want a warning naming nvidia.com/mig-2g.10gb", got)
	}
	c.waitUnschedulable("mig-2g", "a pod asking for a profile no GPU is to be unschedulable")

	_, err = c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Create(c.ctx, hamiPod("mig-two", nil, "nvidia.com/mig-1g.5gb", "2"), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "spec.containers[0].resources.limits[nvidia.com/mig-1g.5gb]") || !strings.Contains(err.Error(), "must be at most 1") {
		t.Errorf("creating a pod asking for two MIG instances in a container: %v, want a refusal naming the resource", err)
	}
}

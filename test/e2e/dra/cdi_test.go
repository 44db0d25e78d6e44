package dra

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

const twoH100 = `
gpus:
- {uuid: GPU-duo-0, index: 0, model: NVIDIA H100 80GB HBM3, memoryMiB: 81920, numaNode: 0}
- {uuid: GPU-duo-1, index: 1, model: NVIDIA H100 80GB HBM3, memoryMiB: 81920, numaNode: 1}
`

// TestContainersGetTheirGPUsAndLimitsThroughCDI checks the CDI devices each
// container gets through the DRA path, resolved as a container runtime
// resolves them: for a pod with one GPU, one with two distinct GPUs, and
// one whose containers use different requests of one claim.
func TestContainersGetTheirGPUsAndLimitsThroughCDI(t *testing.T) {
	c := startCluster(t, &simNode{name: "duo", gpus: twoH100})
	c.claimTemplate("one", resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
		gpuRequest("gpu", 1, map[resourceapi.QualifiedName]string{gpuv1alpha1.DRACapacityMemory: "12Gi", gpuv1alpha1.DRACapacityCores: "40"}),
	}})
	c.claimTemplate("two", resourceapi.DeviceClaim{
		Requests: []resourceapi.DeviceRequest{
			gpuRequest("gpus", 2, map[resourceapi.QualifiedName]string{gpuv1alpha1.DRACapacityMemory: "10Gi", gpuv1alpha1.DRACapacityCores: "25"}),
		},
		Constraints: []resourceapi.DeviceConstraint{{DistinctAttribute: ptr.To(resourceapi.FullyQualifiedName(gpuv1alpha1.DRADriverName + "/" + string(gpuv1alpha1.DRAAttributeUUID)))}},
	})
	c.claimTemplate("split", resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
		gpuRequest("small", 1, map[resourceapi.QualifiedName]string{gpuv1alpha1.DRACapacityMemory: "8Gi", gpuv1alpha1.DRACapacityCores: "20"}),
		gpuRequest("big", 1, map[resourceapi.QualifiedName]string{gpuv1alpha1.DRACapacityMemory: "16Gi", gpuv1alpha1.DRACapacityCores: "50"}),
	}})
	c.createPod(claimPod("single", "duo", "one", map[string]string{"cuda": ""}))
	c.createPod(claimPod("multi-gpu", "duo", "two", map[string]string{"cuda": ""}))
	c.createPod(claimPod("multi-container", "duo", "split", map[string]string{"a": "small", "b": "big", "c": ""}))

	single := c.waitRunning("single")
	uuids := c.allocatedUUIDs(single)
	if len(uuids) != 1 {
		t.Fatalf("single got GPUs %v", uuids)
	}
	assertEnv(t, "single/cuda", c.containerEnv(single)["cuda"],
		"NVIDIA_VISIBLE_DEVICES="+uuids[0], "CUDA_DEVICE_MEMORY_LIMIT_0=12288m", "CUDA_DEVICE_SM_LIMIT=40")

	multi := c.waitRunning("multi-gpu")
	uuids = c.allocatedUUIDs(multi)
	if len(uuids) != 2 || uuids[0] == uuids[1] {
		t.Fatalf("multi-gpu got GPUs %v, want two distinct", uuids)
	}
	// The memory limits follow the visible devices' order.
	assertEnv(t, "multi-gpu/cuda", c.containerEnv(multi)["cuda"],
		"NVIDIA_VISIBLE_DEVICES="+strings.Join(uuids, ","), "CUDA_DEVICE_MEMORY_LIMIT_0=10240m", "CUDA_DEVICE_MEMORY_LIMIT_1=10240m", "CUDA_DEVICE_SM_LIMIT=25")

	mc := c.waitRunning("multi-container")
	env := c.containerEnv(mc)
	assertEnv(t, "multi-container/a", env["a"], "CUDA_DEVICE_MEMORY_LIMIT_0=8192m", "CUDA_DEVICE_SM_LIMIT=20")
	assertEnv(t, "multi-container/b", env["b"], "CUDA_DEVICE_MEMORY_LIMIT_0=16384m", "CUDA_DEVICE_SM_LIMIT=50")
	if slices.ContainsFunc(env["a"], func(e string) bool { return strings.HasPrefix(e, "CUDA_DEVICE_MEMORY_LIMIT_1") }) {
		t.Errorf("container a, which uses one request, sees a second GPU: %v", env["a"])
	}
	// A container naming the claim without a request gets both requests.
	if got := len(c.agents["duo"].Results(mc.UID)); got != 3 {
		t.Errorf("multi-container has %d container results, want 3", got)
	}
	for _, r := range c.agents["duo"].Results(mc.UID) {
		if want := map[string]int{"a": 1, "b": 1, "c": 2}[r.Container]; len(r.CDIDevices) != want {
			t.Errorf("container %s got CDI devices %v, want %d", r.Container, r.CDIDevices, want)
		}
	}
}

func assertEnv(t *testing.T, what string, env []string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(env, w) {
			t.Errorf("%s: env %v lacks %s", what, env, w)
		}
	}
}

// allocatedUUIDs returns the GPUs the pod's claim was allocated, in the
// allocation's order.
func (c *cluster) allocatedUUIDs(pod *corev1.Pod) []string {
	c.t.Helper()
	claim, err := c.cp.Kube.ResourceV1().ResourceClaims(pod.Namespace).Get(c.ctx, *pod.Status.ResourceClaimStatuses[0].ResourceClaimName, metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	items, err := c.slices(pod.Spec.NodeName)
	if err != nil || len(items) != 1 {
		c.t.Fatalf("slices of %s: %v, %d", pod.Spec.NodeName, err, len(items))
	}
	var out []string
	for _, r := range claim.Status.Allocation.Devices.Results {
		for _, d := range items[0].Spec.Devices {
			if d.Name == r.Device {
				out = append(out, *d.Attributes[gpuv1alpha1.DRAAttributeUUID].StringValue)
			}
		}
	}
	return out
}

package kubelet

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/config"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/test/framework"
)

// mixedMIGNode has GPU 0 in MIG mode, cut into a 3g.40gb and two 1g.10gb
// instances, and GPU 1 whole.
const mixedMIGNode = `
gpus:
- uuid: GPU-mig-0
  model: NVIDIA A100-SXM4-80GB
  memoryMiB: 81920
  migInstances:
  - {uuid: MIG-0-big, profile: 3g.40gb, memoryMiB: 40192, gpuInstanceID: 2, computePercent: 43}
  - {uuid: MIG-0-a, profile: 1g.10gb, memoryMiB: 9856, gpuInstanceID: 9, computePercent: 14}
  - {uuid: MIG-0-b, profile: 1g.10gb, memoryMiB: 9856, gpuInstanceID: 10, computePercent: 14}
- uuid: GPU-whole-1
  model: NVIDIA A100-SXM4-80GB
  memoryMiB: 81920
`

// TestMIGOnAMixedNode runs the plugin on a node with one GPU in MIG mode
// and one not: its GPUNode lists the instances with their parent and
// profile and never the MIG-mode GPU; placement, reading that GPUNode,
// gives a pod asking for a profile an instance, whole; and the kubelet
// hands the container the instance's MIG UUID, while the whole GPU beside
// it is still shared. A pod that asks by NVIDIA's resource name
// (nvidia.com/mig-<profile>), as the webhook turns it, is handed its
// instance the same way.
func TestMIGOnAMixedNode(t *testing.T) {
	cp, logger, ctx, node, dir := startNode(t, "mig-node", mixedMIGNode)
	cfg := pluginConfig(node, filepath.Join(dir, "gpus.yaml"))
	cfg.DeviceListStrategy = config.StrategyCDI
	cfg.CDISpecDir = filepath.Join(dir, "cdi")
	kl := startKubeletAndPlugin(ctx, t, logger, cp, cfg)

	var gn *gpuv1alpha1.GPUNode
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		gn, err = cp.Tessera.GpuV1alpha1().GPUNodes().Get(ctx, node, metav1.GetOptions{})
		return err == nil && len(gn.Status.Devices) > 0, nil
	})
	if err != nil {
		t.Fatalf("the plugin published no GPUNode: %v", err)
	}
	byUUID := map[string]gpuv1alpha1.GPUDevice{}
	for _, d := range gn.Status.Devices {
		byUUID[d.UUID] = d
	}
	if _, listed := byUUID["GPU-mig-0"]; listed || len(gn.Status.Devices) != 4 {
		t.Fatalf("GPUNode devices %+v, want the three MIG instances and the whole GPU, never the MIG-mode GPU", gn.Status.Devices)
	}
	small := byUUID["MIG-0-a"]
	if small.MIG == nil || small.MIG.ParentUUID != "GPU-mig-0" || small.MIG.Profile != "1g.10gb" || small.MIG.ComputePercent != 14 ||
		small.MemoryMiB != 9856 || small.ShareLimit != 1 || small.Cores != 100 {
		t.Errorf("MIG instance in the GPUNode: %+v %+v", small, small.MIG)
	}
	if whole := byUUID["GPU-whole-1"]; whole.MIG != nil || whole.ShareLimit != splitCount {
		t.Errorf("whole GPU in the GPUNode: %+v", whole)
	}

	// place fits the pod on the GPUNode as the extender would, with
	// what earlier pods hold, and binds it.
	var holds []gpuv1alpha1.ContainerAllocation
	place := func(t *testing.T, pod *corev1.Pod) *corev1.Pod {
		t.Helper()
		containers, err := gpurequest.PodRequests(pod, gpurequest.DefaultResourceNames())
		if err != nil {
			t.Fatal(err)
		}
		sel, err := gpurequest.ParseAnnotations(pod.Annotations)
		if err != nil {
			t.Fatal(err)
		}
		req, err := placement.NewRequest(containers, sel, gpurequest.Spread)
		if err != nil {
			t.Fatal(err)
		}
		n := placement.NewNode(gn, nil)
		for _, c := range holds {
			for _, d := range c.Devices {
				n.Add([]placement.Hold{{UUID: d.UUID, MemoryMiB: d.MemoryMiB, Cores: d.Cores, Shares: 1}})
			}
		}
		assignment, failure := placement.Fit(&n, req)
		if failure != nil {
			t.Fatalf("no fit: %v", failure)
		}
		holds = append(holds, assignment...)
		return framework.CreateBoundPod(ctx, t, cp, node, pod, assignment...)
	}
	gpuPod := func(name string, annotations map[string]string, limits corev1.ResourceList) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "cuda", Resources: corev1.ResourceRequirements{Limits: limits}}}},
		}
	}
	visible := func(t *testing.T, pod *corev1.Pod) (string, []string) {
		t.Helper()
		opts, err := kl.admit(ctx, pod)
		if err != nil {
			t.Fatal(err)
		}
		o := opts["main"]
		if o == nil {
			t.Fatal("no device options")
		}
		var cdi []string
		for _, d := range o.CDIDevices {
			cdi = append(cdi, d.Name)
		}
		for _, e := range o.Envs {
			if e.Name == "CUDA_DEVICE_MEMORY_LIMIT_0" {
				return e.Value, cdi
			}
		}
		return "", cdi
	}

	t.Run("a pod asking for a profile gets a MIG instance by its UUID", func(t *testing.T) {
		pod := place(t, gpuPod("profile", map[string]string{gpurequest.AnnotationMIGProfile: "1g.10gb"}, gpus(1).Limits))
		limit, cdi := visible(t, pod)
		if len(cdi) != 1 || cdi[0] != "tessera.dev/gpu=MIG-0-a" || limit != "9856m" {
			t.Errorf("CDI devices %v, memory limit %s; want the 1g.10gb instance MIG-0-a, whole", cdi, limit)
		}
	})
	t.Run("the profile as a GPU type gets the other instance", func(t *testing.T) {
		pod := place(t, gpuPod("gputype", map[string]string{gpurequest.AnnotationGPUType: "1g.10gb"}, gpus(1).Limits))
		if _, cdi := visible(t, pod); len(cdi) != 1 || cdi[0] != "tessera.dev/gpu=MIG-0-b" {
			t.Errorf("CDI devices %v, want the free 1g.10gb instance MIG-0-b", cdi)
		}
	})
	t.Run("slices of the whole GPU beside it are still shared", func(t *testing.T) {
		shared := func(name string) corev1.ResourceList {
			l := gpus(1).Limits
			l["nvidia.com/gpumem"] = *resourceQuantity(4000)
			l["nvidia.com/gpucores"] = *resourceQuantity(20)
			return l
		}
		for _, name := range []string{"shared-1", "shared-2"} {
			pod := place(t, gpuPod(name, map[string]string{gpurequest.AnnotationGPUMode: "hami-core"}, shared(name)))
			if limit, cdi := visible(t, pod); len(cdi) != 1 || cdi[0] != "tessera.dev/gpu=GPU-whole-1" || limit != "4000m" {
				t.Errorf("%s: CDI devices %v, memory limit %s; want a 4000 MiB slice of GPU-whole-1", name, cdi, limit)
			}
		}
	})
	t.Run("a pod asking nvidia.com/mig-3g.40gb, as the webhook turns it, gets that instance by its UUID", func(t *testing.T) {
		// Last: the webhook's configurations outlive the subtest.
		cp.StartWebhook(t, nil)
		written := gpuPod("nvidia-name", nil, corev1.ResourceList{"nvidia.com/mig-3g.40gb": *resourceQuantity(1)})
		written.Namespace = metav1.NamespaceDefault
		// A dry run returns the pod as the webhook turned it, which the
		// test then binds itself, past the webhook, as the extender would.
		pod, err := cp.Kube.CoreV1().Pods(written.Namespace).Create(ctx, written, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatal(err)
		}
		pod.ObjectMeta = metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, Annotations: pod.Annotations,
			Labels: map[string]string{"tessera.dev/webhook": "disabled"}}
		pod.Spec.SchedulerName = ""
		if limit, cdi := visible(t, place(t, pod)); len(cdi) != 1 || cdi[0] != "tessera.dev/gpu=MIG-0-big" || limit != "40192m" {
			t.Errorf("CDI devices %v, memory limit %s; want the 3g.40gb instance MIG-0-big, whole", cdi, limit)
		}
	})
}

package kubelet

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/vdevice"
	"github.com/tessera-gpu/tessera/test/framework"
)

const fourGPUs = `
gpus:
- {uuid: GPU-k-0, index: 0, model: NVIDIA A100-SXM4-40GB, memoryMiB: 40960, numaNode: 0}
- {uuid: GPU-k-1, index: 1, model: NVIDIA A100-SXM4-40GB, memoryMiB: 40960, numaNode: 0}
- {uuid: GPU-k-2, index: 2, model: NVIDIA A100-SXM4-40GB, memoryMiB: 40960, numaNode: 1}
- {uuid: GPU-k-3, index: 3, model: NVIDIA A100-SXM4-40GB, memoryMiB: 40960, numaNode: 1}
`

const splitCount = 4

// wantContainer is what one container must get.
type wantContainer struct {
	visible string
	limits  []string
	sm      string
}

// TestDevicePluginWithTheKubeletDeviceManager registers Tessera's plugin
// with the kubelet's device manager and admits pods through it.
func TestDevicePluginWithTheKubeletDeviceManager(t *testing.T) {
	cp, logger, ctx, node, dir := startNode(t, "kubelet-node", fourGPUs)
	library := filepath.Join(dir, "hami", "libvgpu.so")
	writeFile(t, library, "not really a library")
	cfg := pluginConfig(node, filepath.Join(dir, "gpus.yaml"))
	cfg.LibraryPath = library
	kl := startKubeletAndPlugin(ctx, t, logger, cp, cfg)

	check := func(t *testing.T, pod *corev1.Pod, opts map[string]*devicemanager.DeviceRunContainerOptions, want map[string]wantContainer) {
		t.Helper()
		if len(opts) != len(want) {
			t.Errorf("%d GPU containers got options, want %d", len(opts), len(want))
		}
		for name, w := range want {
			o := opts[name]
			if o == nil {
				t.Errorf("container %s got no device options", name)
				continue
			}
			env := map[string]string{}
			for _, e := range o.Envs {
				env[e.Name] = e.Value
			}
			if env["NVIDIA_VISIBLE_DEVICES"] != w.visible || env["CUDA_DEVICE_SM_LIMIT"] != w.sm ||
				env["CUDA_DEVICE_MEMORY_SHARED_CACHE"] != "/tmp/tessera-vgpu-"+string(pod.UID)+"-"+name+".cache" {
				t.Errorf("container %s env %v, want visible %s SM %s", name, env, w.visible, w.sm)
			}
			for i, l := range w.limits {
				if got := env["CUDA_DEVICE_MEMORY_LIMIT_"+string(rune('0'+i))]; got != l {
					t.Errorf("container %s memory limit %d = %q, want %q", name, i, got, l)
				}
			}
			if _, extra := env["CUDA_DEVICE_MEMORY_LIMIT_"+string(rune('0'+len(w.limits)))]; extra {
				t.Errorf("container %s has a limit for a GPU it does not have: %v", name, env)
			}
			var mounts []string
			for _, m := range o.Mounts {
				mounts = append(mounts, m.HostPath+"->"+m.ContainerPath)
				if !m.ReadOnly {
					t.Errorf("container %s mount %s is writable", name, m.ContainerPath)
				}
			}
			wantMounts := []string{library + "->/usr/local/vgpu/libvgpu.so", filepath.Join(dir, "hami", "ld.so.preload") + "->/etc/ld.so.preload"}
			if !slices.Equal(mounts, wantMounts) {
				t.Errorf("container %s mounts %v, want %v", name, mounts, wantMounts)
			}
			// The kubelet's own record of the container's devices names the
			// physical GPUs the scheduler chose.
			var kubeletGPUs []string
			for id := range kl.mgr.GetDevices(string(pod.UID), name)[gpuResource] {
				uuid, _, _ := vdevice.Parse(id)
				kubeletGPUs = append(kubeletGPUs, uuid)
			}
			slices.Sort(kubeletGPUs)
			wantGPUs := strings.Split(w.visible, ",")
			slices.Sort(wantGPUs)
			if !slices.Equal(kubeletGPUs, wantGPUs) {
				t.Errorf("kubelet recorded GPUs %v for %s, want %v", kubeletGPUs, name, wantGPUs)
			}
		}
		a, err := cp.Tessera.GpuV1alpha1().GPUAllocations(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if a.Status.Phase != gpuv1alpha1.AllocationAllocated || len(a.Status.ServedContainers) != len(want) {
			t.Errorf("allocation status %+v, want Allocated with %d containers served", a.Status, len(want))
		}
	}

	t.Run("init container and several GPU containers", func(t *testing.T) {
		pod := framework.CreateBoundPod(ctx, t, cp, node, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "train"},
			Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "prepare", Image: "cuda", Resources: gpus(1)}},
				Containers: []corev1.Container{
					{Name: "trainer", Image: "cuda", Resources: gpus(2)},
					{Name: "logger", Image: "busybox"},
					{Name: "eval", Image: "cuda", Resources: gpus(1)},
				},
			},
		},
			placed("prepare", gpuv1alpha1.ContainerInit, slice("GPU-k-0", 0, 1000, 10)),
			placed("trainer", gpuv1alpha1.ContainerApp, slice("GPU-k-0", 0, 8000, 50), slice("GPU-k-2", 2, 8000, 50)),
			placed("eval", gpuv1alpha1.ContainerApp, slice("GPU-k-3", 3, 2000, 0)),
		)
		opts, err := kl.admit(ctx, pod)
		if err != nil {
			t.Fatal(err)
		}
		check(t, pod, opts, map[string]wantContainer{
			"prepare": {visible: "GPU-k-0", limits: []string{"1000m"}, sm: "10"},
			"trainer": {visible: "GPU-k-0,GPU-k-2", limits: []string{"8000m", "8000m"}, sm: "50"},
			"eval":    {visible: "GPU-k-3", limits: []string{"2000m"}, sm: "0"},
		})
	})

	t.Run("sidecar and app container", func(t *testing.T) {
		pod := framework.CreateBoundPod(ctx, t, cp, node, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "serve"},
			Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "proxy", Image: "cuda", Resources: gpus(1), RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}},
				Containers:     []corev1.Container{{Name: "model", Image: "cuda", Resources: gpus(1)}},
			},
		},
			placed("proxy", gpuv1alpha1.ContainerSidecar, slice("GPU-k-1", 1, 500, 5)),
			placed("model", gpuv1alpha1.ContainerApp, slice("GPU-k-1", 1, 20000, 90)),
		)
		opts, err := kl.admit(ctx, pod)
		if err != nil {
			t.Fatal(err)
		}
		check(t, pod, opts, map[string]wantContainer{
			"proxy": {visible: "GPU-k-1", limits: []string{"500m"}, sm: "5"},
			"model": {visible: "GPU-k-1", limits: []string{"20000m"}, sm: "90"},
		})
	})

	t.Run("device count mismatch is a clear kubelet error", func(t *testing.T) {
		pod := framework.CreateBoundPod(ctx, t, cp, node, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "mismatch"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "cuda", Resources: gpus(2)}}},
		}, placed("main", gpuv1alpha1.ContainerApp, slice("GPU-k-2", 2, 1000, 0)))
		_, err := kl.admit(ctx, pod)
		if err == nil || !strings.Contains(err.Error(), `the kubelet asked for 2 GPUs for container "main" of pod default/mismatch, but the scheduler placed 1`) {
			t.Fatalf("admission error %v, want the count mismatch", err)
		}
		a, _ := cp.Tessera.GpuV1alpha1().GPUAllocations("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if a.Status.Phase != gpuv1alpha1.AllocationFailed || len(a.Status.ServedContainers) != 0 {
			t.Errorf("allocation status %+v, want Failed with nothing served", a.Status)
		}
	})

	t.Run("no pending allocation is a clear kubelet error", func(t *testing.T) {
		pod := framework.CreateBoundPod(ctx, t, cp, node, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "unplaced"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "cuda", Resources: gpus(1)}}},
		})
		_, err := kl.admit(ctx, pod)
		if err == nil || !strings.Contains(err.Error(), "no pending GPUAllocation for node kubelet-node") {
			t.Fatalf("admission error %v, want no pending allocation", err)
		}
	})

	t.Run("the plugin registers again after a kubelet restart", func(t *testing.T) {
		if err := kl.mgr.Stop(logger); err != nil {
			t.Fatal(err)
		}
		// The new kubelet knows the pods still running.
		kl = startKubelet(t, logger, kl.activePods())
		kl.waitForDevices(t, logger, 4*splitCount)
		pod := framework.CreateBoundPod(ctx, t, cp, node, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "after-restart"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "cuda", Resources: gpus(1)}}},
		}, placed("main", gpuv1alpha1.ContainerApp, slice("GPU-k-2", 2, 4000, 25)))
		opts, err := kl.admit(ctx, pod)
		if err != nil {
			t.Fatal(err)
		}
		check(t, pod, opts, map[string]wantContainer{"main": {visible: "GPU-k-2", limits: []string{"4000m"}, sm: "25"}})
	})
}

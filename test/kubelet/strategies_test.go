package kubelet

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/config"
	"github.com/tessera-gpu/tessera/test/framework"
)

// strategyCase is a pod, where the scheduler placed its containers, and
// the GPUs each GPU container must reach.
type strategyCase struct {
	name       string
	pod        *corev1.Pod
	placements []gpuv1alpha1.ContainerAllocation
	want       map[string][]string
	limits     map[string][]string
}

func strategyCases() []strategyCase {
	return []strategyCase{
		{
			name: "single",
			pod:  &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "cuda", Resources: gpus(1)}}}},
			placements: []gpuv1alpha1.ContainerAllocation{
				placed("main", gpuv1alpha1.ContainerApp, slice("GPU-k-1", 1, 3000, 30)),
			},
			want:   map[string][]string{"main": {"GPU-k-1"}},
			limits: map[string][]string{"main": {"3000m"}},
		},
		{
			name: "multi-gpu",
			pod:  &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "cuda", Resources: gpus(3)}}}},
			placements: []gpuv1alpha1.ContainerAllocation{
				placed("main", gpuv1alpha1.ContainerApp, slice("GPU-k-3", 3, 5000, 20), slice("GPU-k-0", 0, 5000, 20), slice("GPU-k-2", 2, 5000, 20)),
			},
			want:   map[string][]string{"main": {"GPU-k-3", "GPU-k-0", "GPU-k-2"}},
			limits: map[string][]string{"main": {"5000m", "5000m", "5000m"}},
		},
		{
			name: "multi-container",
			pod: &corev1.Pod{Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "warm", Image: "cuda", Resources: gpus(1)}},
				Containers: []corev1.Container{
					{Name: "a", Image: "cuda", Resources: gpus(2)},
					{Name: "sidecar", Image: "busybox"},
					{Name: "b", Image: "cuda", Resources: gpus(1)},
				},
			}},
			placements: []gpuv1alpha1.ContainerAllocation{
				placed("warm", gpuv1alpha1.ContainerInit, slice("GPU-k-2", 2, 1000, 10)),
				placed("a", gpuv1alpha1.ContainerApp, slice("GPU-k-0", 0, 2000, 40), slice("GPU-k-1", 1, 2000, 40)),
				placed("b", gpuv1alpha1.ContainerApp, slice("GPU-k-0", 0, 6000, 0)),
			},
			want:   map[string][]string{"warm": {"GPU-k-2"}, "a": {"GPU-k-0", "GPU-k-1"}, "b": {"GPU-k-0"}},
			limits: map[string][]string{"warm": {"1000m"}, "a": {"2000m", "2000m"}, "b": {"6000m"}},
		},
	}
}

// TestDeviceListStrategiesThroughTheKubelet runs the plugin with each
// device-list strategy behind the kubelet's device manager and checks what
// the kubelet would hand the container runtime for single-GPU, multi-GPU
// and multi-container pods: the variable, the mounts or the CDI devices,
// and HAMi-core's limits in every strategy.
func TestDeviceListStrategiesThroughTheKubelet(t *testing.T) {
	cp, logger, ctx, node, dir := startNode(t, "strategy-node", fourGPUs)

	for _, strategy := range config.DeviceListStrategies() {
		t.Run(strategy, func(t *testing.T) {
			cfg := pluginConfig(node, filepath.Join(dir, "gpus.yaml"))
			cfg.DeviceListStrategy = strategy
			cfg.CDISpecDir = filepath.Join(dir, "cdi-"+strategy)
			// One run over-commits memory: its containers, and only
			// theirs, get HAMi-core's over-subscription.
			oversubscribed := strategy == config.StrategyVolumeMounts
			if oversubscribed {
				cfg.MemoryScaling = 1.5
			}
			kl := startKubeletAndPlugin(ctx, t, logger, cp, cfg)

			for _, tc := range strategyCases() {
				t.Run(tc.name, func(t *testing.T) {
					pod := tc.pod.DeepCopy()
					pod.Name = strategy + "-" + tc.name
					pod = framework.CreateBoundPod(ctx, t, cp, node, pod, tc.placements...)
					opts, err := kl.admit(ctx, pod)
					if err != nil {
						t.Fatal(err)
					}
					if len(opts) != len(tc.want) {
						t.Errorf("%d containers got device options, want %d", len(opts), len(tc.want))
					}
					for name, uuids := range tc.want {
						if o := opts[name]; o == nil {
							t.Errorf("container %s got no device options", name)
						} else {
							checkStrategy(t, strategy, name, o, uuids, tc.limits[name])
							checkOversubscribed(t, name, o, oversubscribed)
						}
					}
				})
			}
			if strategy == config.StrategyCDI {
				checkSpec(t, cfg.CDISpecDir)
			}
		})
	}
}

// checkStrategy checks one container's options from the kubelet.
func checkStrategy(t *testing.T, strategy, name string, o *devicemanager.DeviceRunContainerOptions, uuids, limits []string) {
	t.Helper()
	env := map[string]string{}
	for _, e := range o.Envs {
		env[e.Name] = e.Value
	}
	for i, l := range limits {
		if got := env[fmt.Sprintf("CUDA_DEVICE_MEMORY_LIMIT_%d", i)]; got != l {
			t.Errorf("container %s: memory limit %d = %q, want %q (env %v)", name, i, got, l, env)
		}
	}
	if _, ok := env["CUDA_DEVICE_SM_LIMIT"]; !ok {
		t.Errorf("container %s: no CUDA_DEVICE_SM_LIMIT in %v", name, env)
	}
	var mounts, cdiDevices []string
	for _, m := range o.Mounts {
		mounts = append(mounts, m.HostPath+"->"+m.ContainerPath)
	}
	for _, d := range o.CDIDevices {
		cdiDevices = append(cdiDevices, d.Name)
	}
	var wantVisible string
	var wantMounts, wantCDI []string
	switch strategy {
	case config.StrategyEnvVar:
		wantVisible = strings.Join(uuids, ",")
	case config.StrategyVolumeMounts:
		wantVisible = "/var/run/nvidia-container-devices"
		for _, u := range uuids {
			wantMounts = append(wantMounts, "/dev/null->/var/run/nvidia-container-devices/"+u)
		}
	case config.StrategyCDI:
		wantVisible = "void"
		for _, u := range uuids {
			wantCDI = append(wantCDI, "tessera.dev/gpu="+u)
		}
	}
	if env["NVIDIA_VISIBLE_DEVICES"] != wantVisible {
		t.Errorf("container %s: NVIDIA_VISIBLE_DEVICES=%q, want %q", name, env["NVIDIA_VISIBLE_DEVICES"], wantVisible)
	}
	if !slices.Equal(mounts, wantMounts) {
		t.Errorf("container %s: mounts %v, want %v", name, mounts, wantMounts)
	}
	if !slices.Equal(cdiDevices, wantCDI) {
		t.Errorf("container %s: CDI devices %v, want %v", name, cdiDevices, wantCDI)
	}
}

// checkSpec reads the plugin's CDI spec as a container runtime does: every
// GPU is a device the runtime can resolve.
func checkSpec(t *testing.T, dir string) {
	t.Helper()
	cache := framework.CDIRuntimeView(t, dir)
	want := []string{"tessera.dev/gpu=GPU-k-0", "tessera.dev/gpu=GPU-k-1", "tessera.dev/gpu=GPU-k-2", "tessera.dev/gpu=GPU-k-3"}
	if got := cache.ListDevices(); !slices.Equal(got, want) {
		t.Errorf("CDI devices in %s: %v, want %v", dir, got, want)
	}
}

// checkOversubscribed checks that the container may over-subscribe its
// GPUs' memory exactly when the node over-commits it.
func checkOversubscribed(t *testing.T, name string, o *devicemanager.DeviceRunContainerOptions, want bool) {
	t.Helper()
	got := slices.ContainsFunc(o.Envs, func(e kubecontainer.EnvVar) bool { return e.Name == "CUDA_OVERSUBSCRIBE" && e.Value == "true" })
	if got != want {
		t.Errorf("container %s: CUDA_OVERSUBSCRIBE=true %v, want %v (env %v)", name, got, want, o.Envs)
	}
}

package kubelet

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	"k8s.io/kubernetes/pkg/kubelet/cm/containermap"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/config"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	dpconfig "github.com/tessera-gpu/tessera/deviceplugin/config"
	"github.com/tessera-gpu/tessera/deviceplugin/plugin"
	"github.com/tessera-gpu/tessera/test/framework"
)

const gpuResource = "nvidia.com/gpu"

// kubelet is the kubelet's device manager and the pods it treats as active.
type kubelet struct {
	mgr *devicemanager.ManagerImpl

	mu   sync.Mutex
	pods []*corev1.Pod
}

// checkPluginDir refuses to run beside a real kubelet, whose socket
// directory the device manager would take over.
func checkPluginDir(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("the kubelet device manager serves %s: run this test as root", pluginapi.KubeletSocket)
	}
	if conn, err := net.DialTimeout("unix", pluginapi.KubeletSocket, time.Second); err == nil {
		conn.Close()
		t.Fatalf("a kubelet is serving %s on this machine; run this test where none runs", pluginapi.KubeletSocket)
	}
	if err := os.MkdirAll(pluginapi.DevicePluginPath, 0o750); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(filepath.Join(pluginapi.DevicePluginPath, "kubelet_internal_checkpoint")) })
}

// startNode starts a control plane with one ready node of the name and
// writes the simulated GPUs for it to gpus.yaml in dir; ctx ends with
// the test, or after four minutes.
func startNode(t *testing.T, name, gpus string) (cp *framework.ControlPlane, logger klog.Logger, ctx context.Context, node, dir string) {
	t.Helper()
	checkPluginDir(t)
	cp = framework.Start(t, framework.Options{})
	logger, ctx = ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	t.Cleanup(cancel)
	node = framework.CreateReadyNode(ctx, t, cp.Kube, name, nil).Name
	dir = t.TempDir()
	writeFile(t, filepath.Join(dir, "gpus.yaml"), gpus)
	return cp, logger, ctx, node, dir
}

// startKubelet starts a device manager, as the kubelet does at start-up:
// it cleans the socket directory and serves kubelet.sock.
func startKubelet(t *testing.T, logger klog.Logger, pods []*corev1.Pod) *kubelet {
	t.Helper()
	mgr, err := devicemanager.NewManagerImpl(logger, nil, topologymanager.NewFakeManager(logger))
	if err != nil {
		t.Fatal(err)
	}
	k := &kubelet{mgr: mgr, pods: pods}
	ready := config.NewSourcesReady(func(sets.Set[string]) bool { return true })
	if err := mgr.Start(logger, k.activePods, ready, containermap.NewContainerMap(), sets.New[string]()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Stop(logger) })
	return k
}

func (k *kubelet) activePods() []*corev1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]*corev1.Pod(nil), k.pods...)
}

// waitForDevices waits until the kubelet has n healthy devices of the resource.
func (k *kubelet) waitForDevices(t *testing.T, logger klog.Logger, n int64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		capacity, allocatable, _ := k.mgr.GetCapacity(logger)
		c, a := capacity[gpuResource], allocatable[gpuResource]
		if c.Value() == n && a.Value() == n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	capacity, allocatable, _ := k.mgr.GetCapacity(logger)
	t.Fatalf("kubelet sees capacity %v allocatable %v, want %d %s", capacity, allocatable, n, gpuResource)
}

// pluginConfig configures the plugin for the node, with the simulated
// GPUs of the file, serving the in-process kubelet.
func pluginConfig(node, gpuFile string) dpconfig.Configuration {
	cfg := dpconfig.Default()
	cfg.NodeName = node
	cfg.SplitCount = splitCount
	cfg.SimulatedGPUFile = gpuFile
	cfg.PluginDir = pluginapi.DevicePluginPath
	cfg.MetricsAddress = ""
	cfg.AllocationLookupTimeout = metav1.Duration{Duration: 2 * time.Second}
	return cfg
}

// runPlugin runs Tessera's device plugin until the returned stop is called.
func runPlugin(ctx context.Context, t *testing.T, cp *framework.ControlPlane, cfg dpconfig.Configuration) (stop func()) {
	t.Helper()
	p, err := plugin.New(cfg, plugin.Dependencies{Kube: cp.Kube, Tessera: cp.Tessera})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("device plugin: %v", err)
		}
	}
}

// startKubeletAndPlugin starts a device manager and Tessera's plugin for
// it, both until the test ends, and waits until the kubelet sees every
// device.
func startKubeletAndPlugin(ctx context.Context, t *testing.T, logger klog.Logger, cp *framework.ControlPlane, cfg dpconfig.Configuration) *kubelet {
	t.Helper()
	kl := startKubelet(t, logger, nil)
	t.Cleanup(runPlugin(ctx, t, cp, cfg))
	kl.waitForDevices(t, logger, 4*splitCount)
	return kl
}

// admit allocates the pod's containers in the kubelet's order, init
// containers first, and returns the options of each GPU container.
func (k *kubelet) admit(ctx context.Context, pod *corev1.Pod) (map[string]*devicemanager.DeviceRunContainerOptions, error) {
	k.mu.Lock()
	k.pods = append(k.pods, pod)
	k.mu.Unlock()
	var all []*corev1.Container
	for i := range pod.Spec.InitContainers {
		all = append(all, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		all = append(all, &pod.Spec.Containers[i])
	}
	for _, c := range all {
		if err := k.mgr.Allocate(ctx, pod, c, lifecycle.AddOperation); err != nil {
			return nil, fmt.Errorf("allocating container %s: %w", c.Name, err)
		}
	}
	out := map[string]*devicemanager.DeviceRunContainerOptions{}
	for _, c := range all {
		opts, err := k.mgr.GetDeviceRunContainerOptions(ctx, pod, c)
		if err != nil {
			return nil, fmt.Errorf("container options of %s: %w", c.Name, err)
		}
		if opts != nil && len(opts.Envs) > 0 {
			out[c.Name] = opts
		}
	}
	return out, nil
}

func gpus(n int64) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Limits: corev1.ResourceList{gpuResource: *resource.NewQuantity(n, resource.DecimalSI)}}
}

func placed(name string, kind gpuv1alpha1.ContainerKind, devices ...gpuv1alpha1.DeviceAllocation) gpuv1alpha1.ContainerAllocation {
	return gpuv1alpha1.ContainerAllocation{Name: name, Kind: kind, Devices: devices}
}

func slice(uuid string, index int32, memoryMiB int64, cores int32) gpuv1alpha1.DeviceAllocation {
	return gpuv1alpha1.DeviceAllocation{UUID: uuid, Index: index, MemoryMiB: memoryMiB, Cores: cores}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func resourceQuantity(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }

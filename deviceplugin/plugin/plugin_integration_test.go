package plugin

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/config"
	"github.com/tessera-gpu/tessera/deviceplugin/dpserver"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/test/framework"
)

const simulatedGPUs = `
gpus:
- {uuid: GPU-sim-0, index: 0, model: NVIDIA A100-SXM4-40GB, memoryMiB: 40960, numaNode: 0}
- {uuid: GPU-sim-1, index: 1, model: NVIDIA A100-SXM4-40GB, memoryMiB: 40960, numaNode: 1}
`

// registrar plays kubelet.sock: it accepts the plugin's registration and
// connects back to it.
type registrar struct {
	pluginapi.UnimplementedRegistrationServer
	dir  string
	regs chan *pluginapi.RegisterRequest
}

func (r *registrar) Register(_ context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	r.regs <- req
	return &pluginapi.Empty{}, nil
}

func startRegistrar(t *testing.T, dir string) *registrar {
	t.Helper()
	lis, err := net.Listen("unix", filepath.Join(dir, dpserver.KubeletSocket))
	if err != nil {
		t.Fatal(err)
	}
	r := &registrar{dir: dir, regs: make(chan *pluginapi.RegisterRequest, 4)}
	s := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(s, r)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return r
}

func (r *registrar) connect(t *testing.T) pluginapi.DevicePluginClient {
	t.Helper()
	var req *pluginapi.RegisterRequest
	select {
	case req = <-r.regs:
	case <-time.After(30 * time.Second):
		t.Fatal("the plugin did not register")
	}
	if req.ResourceName != "nvidia.com/gpu" || req.Version != pluginapi.Version {
		t.Errorf("registration %+v", req)
	}
	conn, err := grpc.NewClient("unix://"+filepath.Join(r.dir, req.Endpoint), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return pluginapi.NewDevicePluginClient(conn)
}

func gpuContainer(name string, gpus int64) corev1.Container {
	return corev1.Container{Name: name, Image: "cuda", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{"nvidia.com/gpu": *resourceQuantity(gpus)},
	}}
}

func allocContainer(name string, kind gpuv1alpha1.ContainerKind, devices ...gpuv1alpha1.DeviceAllocation) gpuv1alpha1.ContainerAllocation {
	return gpuv1alpha1.ContainerAllocation{Name: name, Kind: kind, Devices: devices}
}

func devAlloc(uuid string, index int32, memory int64, cores int32) gpuv1alpha1.DeviceAllocation {
	return gpuv1alpha1.DeviceAllocation{UUID: uuid, Index: index, MemoryMiB: memory, Cores: cores}
}

// runPlugin creates the plugin of cfg on the control plane, on backend
// (nil: the configuration's GPUs), and runs it until stop is called;
// stop returns what Run returned, however often it is called.
func runPlugin(ctx context.Context, t *testing.T, cp *framework.ControlPlane, cfg config.Configuration, backend gpu.Backend) (p *Plugin, stop func() error) {
	t.Helper()
	p, err := New(cfg, Dependencies{Kube: cp.Kube, Tessera: cp.Tessera, Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	return p, sync.OnceValue(func() error {
		cancel()
		return <-done
	})
}

func allocate(ctx context.Context, client pluginapi.DevicePluginClient, ids ...string) (*pluginapi.ContainerAllocateResponse, error) {
	resp, err := client.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: ids}}})
	if err != nil {
		return nil, err
	}
	return resp.ContainerResponses[0], nil
}

func getAllocation(ctx context.Context, t *testing.T, cp *framework.ControlPlane, name string) *gpuv1alpha1.GPUAllocation {
	t.Helper()
	a, err := cp.Tessera.GpuV1alpha1().GPUAllocations("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func waitReady(ctx context.Context, t *testing.T, cp *framework.ControlPlane, node string, want metav1.ConditionStatus, reason string) {
	t.Helper()
	waitCondition(ctx, t, cp, node, gpuv1alpha1.GPUNodeReady, want, reason, "")
}

// waitCondition waits for the GPUNode's condition of the type to have the
// status and reason, with a message that mentions says.
func waitCondition(ctx context.Context, t *testing.T, cp *framework.ControlPlane, node, conditionType string, want metav1.ConditionStatus, reason, says string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last *metav1.Condition
	for time.Now().Before(deadline) {
		n, err := cp.Tessera.GpuV1alpha1().GPUNodes().Get(ctx, node, metav1.GetOptions{})
		if err == nil {
			last = meta.FindStatusCondition(n.Status.Conditions, conditionType)
			if last != nil && last.Status == want && last.Reason == reason && strings.Contains(last.Message, says) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("GPUNode %s condition %s = %+v, want %s/%s mentioning %q", node, conditionType, last, want, reason, says)
}

// TestPluginServesAllocationsFromTheAPIServer runs the whole plugin in
// process against a real kube-apiserver, with a simulated node and a
// stand-in for kubelet.sock that calls Allocate as the kubelet would.
func TestPluginServesAllocationsFromTheAPIServer(t *testing.T) {
	cp := framework.Start(t, framework.Options{})
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	node := framework.CreateReadyNode(ctx, t, cp.Kube, "sim-node-1", nil).Name

	dir := t.TempDir()
	gpuFile := filepath.Join(dir, "gpus.yaml")
	if err := os.WriteFile(gpuFile, []byte(simulatedGPUs), 0o600); err != nil {
		t.Fatal(err)
	}
	pluginDir := filepath.Join(dir, "device-plugins")
	if err := os.Mkdir(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.NodeName = node
	cfg.SplitCount = 4
	cfg.SimulatedGPUFile = gpuFile
	cfg.PluginDir = pluginDir
	cfg.MetricsAddress = "127.0.0.1:0"
	cfg.HeartbeatPeriod = metav1.Duration{Duration: time.Second}
	cfg.AllocationLookupTimeout = metav1.Duration{Duration: 2 * time.Second}
	cfg.LibraryPath = filepath.Join(dir, "libvgpu.so")
	reg := startRegistrar(t, pluginDir)
	p, stop := runPlugin(ctx, t, cp, cfg, nil)
	defer func() { _ = stop() }()

	client := reg.connect(t)
	waitReady(ctx, t, cp, node, metav1.ConditionTrue, "Registered")
	preload, err := os.ReadFile(filepath.Join(dir, "ld.so.preload"))
	if err != nil || string(preload) != "/usr/local/vgpu/libvgpu.so\n" {
		t.Errorf("preload file %q, %v", preload, err)
	}

	t.Run("the HAMi-core condition follows the library on the node", func(t *testing.T) {
		waitCondition(ctx, t, cp, node, gpuv1alpha1.GPUNodeHAMiCoreReady, metav1.ConditionFalse, gpuv1alpha1.HAMiCoreLibraryMissing, cfg.LibraryPath)
		if err := os.WriteFile(cfg.LibraryPath, []byte("\x7fELF"), 0o644); err != nil {
			t.Fatal(err)
		}
		// Installed later (by hand, or an init container that was slow):
		// the next heartbeat sees it.
		waitCondition(ctx, t, cp, node, gpuv1alpha1.GPUNodeHAMiCoreReady, metav1.ConditionTrue, gpuv1alpha1.HAMiCoreInstalled, cfg.LibraryPath)
	})

	t.Run("devices are GPUs times split count", func(t *testing.T) {
		stream, err := client.ListAndWatch(ctx, &pluginapi.Empty{})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Devices) != 8 {
			t.Errorf("%d devices, want 2 GPUs x 4", len(resp.Devices))
		}
	})

	t.Run("init and app containers are served in order, back to back", func(t *testing.T) {
		pod := framework.CreateBoundPod(ctx, t, cp, node, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "train"},
			Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{gpuContainer("warmup", 1)},
				Containers:     []corev1.Container{gpuContainer("worker", 2), gpuContainer("sidecar-free", 0), gpuContainer("eval", 1)},
			},
		},
			allocContainer("warmup", gpuv1alpha1.ContainerInit, devAlloc("GPU-sim-1", 1, 1000, 10)),
			allocContainer("worker", gpuv1alpha1.ContainerApp, devAlloc("GPU-sim-0", 0, 8000, 50), devAlloc("GPU-sim-1", 1, 8000, 50)),
			allocContainer("eval", gpuv1alpha1.ContainerApp, devAlloc("GPU-sim-0", 0, 2000, 0)),
		)
		// No pause between calls: the plugin's cache lags its own writes,
		// and the API server's optimistic concurrency must keep the order.
		want := []struct {
			ids     []string
			visible string
			limits  []string
			sm      string
		}{
			{[]string{"GPU-sim-1::0"}, "GPU-sim-1", []string{"1000m"}, "10"},
			{[]string{"GPU-sim-0::0", "GPU-sim-1::1"}, "GPU-sim-0,GPU-sim-1", []string{"8000m", "8000m"}, "50"},
			{[]string{"GPU-sim-0::1"}, "GPU-sim-0", []string{"2000m"}, "0"},
		}
		for i, w := range want {
			resp, err := allocate(ctx, client, w.ids...)
			if err != nil {
				t.Fatalf("Allocate %d: %v", i, err)
			}
			if resp.Envs["NVIDIA_VISIBLE_DEVICES"] != w.visible || resp.Envs["CUDA_DEVICE_SM_LIMIT"] != w.sm {
				t.Errorf("container %d envs %v, want visible %s SM %s", i, resp.Envs, w.visible, w.sm)
			}
			for j, l := range w.limits {
				if got := resp.Envs["CUDA_DEVICE_MEMORY_LIMIT_"+string(rune('0'+j))]; got != l {
					t.Errorf("container %d limit %d = %q, want %q", i, j, got, l)
				}
			}
			if len(resp.Mounts) != 2 || resp.Mounts[1].ContainerPath != "/etc/ld.so.preload" {
				t.Errorf("container %d mounts %v, want the library and ld.so.preload", i, resp.Mounts)
			}
		}
		a := getAllocation(ctx, t, cp, pod.Name)
		if a.Status.Phase != gpuv1alpha1.AllocationAllocated || strings.Join(a.Status.ServedContainers, ",") != "warmup,worker,eval" || a.Status.AllocatedTime == nil {
			t.Errorf("status %+v, want Allocated with every container served in order", a.Status)
		}
	})

	t.Run("GetPreferredAllocation steers to the placed GPUs", func(t *testing.T) {
		framework.CreateBoundPod(ctx, t, cp, node, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "steer"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{gpuContainer("main", 1)}},
		}, allocContainer("main", gpuv1alpha1.ContainerApp, devAlloc("GPU-sim-1", 1, 1000, 0)))
		resp, err := client.GetPreferredAllocation(ctx, &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
			AvailableDeviceIDs: []string{"GPU-sim-0::2", "GPU-sim-0::3", "GPU-sim-1::2", "GPU-sim-1::3"}, AllocationSize: 1,
		}}})
		if err != nil || len(resp.ContainerResponses[0].DeviceIDs) != 1 || resp.ContainerResponses[0].DeviceIDs[0] != "GPU-sim-1::2" {
			t.Fatalf("preferred %v, %v; want GPU-sim-1::2", resp, err)
		}
		if _, err := allocate(ctx, client, "GPU-sim-1::2"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("device count mismatch fails the allocation", func(t *testing.T) {
		pod := framework.CreateBoundPod(ctx, t, cp, node, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "mismatch"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{gpuContainer("main", 1)}},
		}, allocContainer("main", gpuv1alpha1.ContainerApp, devAlloc("GPU-sim-0", 0, 1000, 0)))
		_, err := allocate(ctx, client, "GPU-sim-0::2", "GPU-sim-1::3")
		if st, _ := status.FromError(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "asked for 2 GPUs") {
			t.Fatalf("Allocate error %v, want InvalidArgument naming the counts", err)
		}
		if a := getAllocation(ctx, t, cp, pod.Name); a.Status.Phase != gpuv1alpha1.AllocationFailed || len(a.Status.ServedContainers) != 0 || !strings.Contains(a.Status.Message, "asked for 2 GPUs") {
			t.Errorf("status %+v, want Failed with the reason and nothing served", a.Status)
		}
	})

	t.Run("pod deleted in between fails the allocation", func(t *testing.T) {
		pod := framework.CreateBoundPod(ctx, t, cp, node, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "gone"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{gpuContainer("main", 1)}},
		}, allocContainer("main", gpuv1alpha1.ContainerApp, devAlloc("GPU-sim-0", 0, 1000, 0)))
		if err := cp.Kube.CoreV1().Pods("default").Delete(ctx, pod.Name, *metav1.NewDeleteOptions(0)); err != nil {
			t.Fatal(err)
		}
		_, err := allocate(ctx, client, "GPU-sim-0::2")
		if st, _ := status.FromError(err); st.Code() != codes.NotFound || !strings.Contains(st.Message(), "default/gone") {
			t.Fatalf("Allocate error %v, want NotFound naming the pod", err)
		}
		if a := getAllocation(ctx, t, cp, pod.Name); a.Status.Phase != gpuv1alpha1.AllocationFailed || len(a.Status.ServedContainers) != 0 {
			t.Errorf("status %+v, want Failed with nothing served", a.Status)
		}
	})

	t.Run("no pending allocation is refused after the lookup timeout", func(t *testing.T) {
		start := time.Now()
		_, err := allocate(ctx, client, "GPU-sim-0::3")
		if st, _ := status.FromError(err); st.Code() != codes.FailedPrecondition || !strings.Contains(st.Message(), "no pending GPUAllocation for node sim-node-1") {
			t.Fatalf("Allocate error %v, want FailedPrecondition", err)
		}
		t.Logf("refused after %v (lookup timeout 2s)", time.Since(start).Round(time.Millisecond))
	})

	t.Run("an allocation the cache has not seen is found on the API server", func(t *testing.T) {
		// Bind and allocate in one breath: the informer is usually behind.
		framework.CreateBoundPod(ctx, t, cp, node, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "fresh"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{gpuContainer("main", 1)}},
		}, allocContainer("main", gpuv1alpha1.ContainerApp, devAlloc("GPU-sim-0", 0, 3000, 30)))
		resp, err := allocate(ctx, client, "GPU-sim-0::3")
		if err != nil || resp.Envs["CUDA_DEVICE_MEMORY_LIMIT_0"] != "3000m" {
			t.Fatalf("Allocate = %v, %v", resp, err)
		}
	})

	t.Run("metrics are served", func(t *testing.T) {
		addr, err := p.MetricsAddress(ctx)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		for _, want := range []string{
			`tessera_node_gpu_memory_total_bytes{index="1",model="NVIDIA A100-SXM4-40GB",node="sim-node-1",uuid="GPU-sim-1"} 4.294967296e+10`,
			`tessera_deviceplugin_allocate_requests_total{result="OK"}`,
			`tessera_deviceplugin_allocate_requests_total{result="NotFound"} 1`,
		} {
			if !strings.Contains(string(body), want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})

	t.Run("stopping marks the node not ready and removes the socket", func(t *testing.T) {
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
		waitReady(ctx, t, cp, node, metav1.ConditionFalse, "Stopped")
		if _, err := os.Stat(filepath.Join(pluginDir, dpserver.SocketName("nvidia.com/gpu"))); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("plugin socket after stop: %v", err)
		}
	})
}

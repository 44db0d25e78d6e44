package metrics

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu/nvmlgpu"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu/nvmlgpu/nvmlfake"
	"github.com/tessera-gpu/tessera/deviceplugin/podproc"
)

type podList []*corev1.Pod

func (p podList) NodePods() ([]*corev1.Pod, error) { return p, nil }

// fakeProc writes /proc/<pid>/cgroup for processes in pods (uid set) or on
// the host (uid empty).
func fakeProc(t *testing.T, procs map[uint32]types.UID) string {
	t.Helper()
	root := t.TempDir()
	for pid, uid := range procs {
		dir := filepath.Join(root, strconv.Itoa(int(pid)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := "/system.slice/sshd.service"
		if uid != "" {
			path = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + strings.ReplaceAll(string(uid), "-", "_") + ".slice/cri-containerd-x.scope"
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte("0::"+path+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const (
	uidA = types.UID("aaaaaaaa-0000-0000-0000-000000000001")
	uidB = types.UID("bbbbbbbb-0000-0000-0000-000000000002")
	uidX = types.UID("cccccccc-0000-0000-0000-000000000003") // not on this node
)

func pod(ns, name string, uid types.UID) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid}}
}

func TestCollectorMeasuresGPUsAndPods(t *testing.T) {
	logger, ctx := ktesting.NewTestContext(t)
	node, err := nvmlfake.New(gpus.A100_SXM4_40GB, gpus.H100_SXM5_80GB)
	if err != nil {
		t.Fatal(err)
	}
	backend := nvmlgpu.New(node, nvmlgpu.Options{})
	inv, err := backend.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node.SetMemoryUsed(0, 6<<30)
	node.SetUtilization(0, 75)
	node.SetMemoryUsed(1, 1<<30)
	node.Device(1).GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED }
	// GPU 0 is shared by two processes of pod a, one of pod b, a host
	// process, a process of a pod the node does not know, and one that
	// exited; GPU 1 by pod b.
	node.SetProcesses(0, []nvml.ProcessInfo{
		{Pid: 10, UsedGpuMemory: 1 << 30}, {Pid: 11, UsedGpuMemory: 512 << 20},
		{Pid: 20, UsedGpuMemory: 2 << 30},
		{Pid: 30, UsedGpuMemory: 256 << 20},
		{Pid: 40, UsedGpuMemory: 128 << 20},
		{Pid: 50, UsedGpuMemory: 64 << 20},
	}, nil)
	node.SetProcesses(1, []nvml.ProcessInfo{{Pid: 21, UsedGpuMemory: 1 << 30}}, nil)
	procRoot := fakeProc(t, map[uint32]types.UID{10: uidA, 11: uidA, 20: uidB, 21: uidB, 30: "", 40: uidX})

	c := NewCollector(logger, "node-1", func() []gpu.Device { return inv.Devices }, backend, podproc.Resolver{ProcRoot: procRoot},
		podList{pod("team", "a", uidA), pod("team", "b", uidB)})

	u0, u1 := node.UUID(0), node.UUID(1)
	want := `
# HELP tessera_node_gpu_memory_total_bytes Physical GPU memory.
# TYPE tessera_node_gpu_memory_total_bytes gauge
tessera_node_gpu_memory_total_bytes{index="0",model="Mock NVIDIA A100-SXM4-40GB",node="node-1",uuid="` + u0 + `"} 4.294967296e+10
tessera_node_gpu_memory_total_bytes{index="1",model="NVIDIA H100 80GB HBM3",node="node-1",uuid="` + u1 + `"} 8.589934592e+10
# HELP tessera_node_gpu_memory_used_bytes GPU memory in use, as the driver measures it.
# TYPE tessera_node_gpu_memory_used_bytes gauge
tessera_node_gpu_memory_used_bytes{index="0",model="Mock NVIDIA A100-SXM4-40GB",node="node-1",uuid="` + u0 + `"} 6.442450944e+09
tessera_node_gpu_memory_used_bytes{index="1",model="NVIDIA H100 80GB HBM3",node="node-1",uuid="` + u1 + `"} 1.073741824e+09
# HELP tessera_node_gpu_pod_memory_used_bytes GPU memory used by the processes of one pod on one GPU.
# TYPE tessera_node_gpu_pod_memory_used_bytes gauge
tessera_node_gpu_pod_memory_used_bytes{index="0",namespace="team",node="node-1",pod="a",uuid="` + u0 + `"} 1.610612736e+09
tessera_node_gpu_pod_memory_used_bytes{index="0",namespace="team",node="node-1",pod="b",uuid="` + u0 + `"} 2.147483648e+09
tessera_node_gpu_pod_memory_used_bytes{index="1",namespace="team",node="node-1",pod="b",uuid="` + u1 + `"} 1.073741824e+09
# HELP tessera_node_gpu_utilization_ratio Fraction of the last sample period in which a kernel ran on the GPU.
# TYPE tessera_node_gpu_utilization_ratio gauge
tessera_node_gpu_utilization_ratio{index="0",model="Mock NVIDIA A100-SXM4-40GB",node="node-1",uuid="` + u0 + `"} 0.75
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}

	// A pod that ends leaves no series behind.
	node.SetProcesses(0, nil, nil)
	node.SetProcesses(1, nil, nil)
	if n := testutil.CollectAndCount(c, "tessera_node_gpu_pod_memory_used_bytes"); n != 0 {
		t.Errorf("%d per-pod series after every process ended, want 0", n)
	}
	// A lost GPU drops out of the scrape instead of failing it.
	node.SetMemoryReturn(1, nvml.ERROR_GPU_IS_LOST)
	if n := testutil.CollectAndCount(c, "tessera_node_gpu_memory_total_bytes"); n != 1 {
		t.Errorf("%d memory series with GPU 1 lost, want 1", n)
	}
}

func TestMetricNamesPassPromlint(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	node, err := nvmlfake.New(gpus.A100_SXM4_40GB)
	if err != nil {
		t.Fatal(err)
	}
	backend := nvmlgpu.New(node, nvmlgpu.Options{})
	inv, err := backend.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	node.SetUtilization(0, 10)
	node.SetProcesses(0, []nvml.ProcessInfo{{Pid: 10, UsedGpuMemory: 1}}, nil)
	procRoot := fakeProc(t, map[uint32]types.UID{10: uidA})
	alloc := NewAllocateMetrics()
	alloc.ObserveAllocate(time.Millisecond, nil)
	alloc.ObserveAllocate(time.Millisecond, status.Error(codes.NotFound, "gone"))
	reg, err := NewRegistry(append(alloc.Collectors(),
		NewCollector(logger, "n", func() []gpu.Device { return inv.Devices }, backend, podproc.Resolver{ProcRoot: procRoot}, podList{pod("ns", "a", uidA)}),
		NewStateCollector("n", func() []gpuv1alpha1.GPUDevice {
			return []gpuv1alpha1.GPUDevice{{UUID: "GPU-a", Health: gpuv1alpha1.GPUHealthy}}
		},
			func() []string { return nil }, func() map[string]Usage { return nil }))...)
	if err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(families).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	seen := map[string]bool{}
	for _, f := range families {
		seen[f.GetName()] = true
	}
	for _, name := range []string{"tessera_node_gpu_memory_used_bytes", "tessera_node_gpu_pod_memory_used_bytes", "tessera_node_gpu_utilization_ratio",
		"tessera_deviceplugin_allocate_requests_total", "tessera_deviceplugin_allocate_duration_seconds", "tessera_gpu_memory_allocated_bytes"} {
		if !seen[name] {
			t.Errorf("metric %s not exported", name)
		}
	}
	if got := testutil.ToFloat64(alloc.requests.WithLabelValues("NotFound")); got != 1 {
		t.Errorf("NotFound results %v, want 1", got)
	}
}

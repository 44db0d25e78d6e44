package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

func testView() *view.View {
	v := view.New()
	hb := metav1.NewTime(time.Unix(1_700_000_000, 0))
	gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	gn.Spec.CordonedDevices = []string{"GPU-b"}
	gn.Status.LastHeartbeatTime = &hb
	gn.Status.Devices = []gpuv1alpha1.GPUDevice{
		{UUID: "GPU-a", Index: 0, Model: "A100", MemoryMiB: 1024, Cores: 100, ShareLimit: 4, Health: gpuv1alpha1.GPUHealthy},
		{UUID: "GPU-b", Index: 1, Model: "A100", MemoryMiB: 2048, Cores: 100, ShareLimit: 4, Health: gpuv1alpha1.GPUUnhealthy},
	}
	v.SetGPUNode(gn)
	v.Place(&gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "a1"},
		Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: "u1", NodeName: "n1", Containers: []gpuv1alpha1.ContainerAllocation{
			{Name: "main", Kind: gpuv1alpha1.ContainerApp, Devices: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-a", MemoryMiB: 256, Cores: 30}}},
		}},
	})
	// A new pod of the same name holds GPUs before the old allocation is gone.
	v.Place(&gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "a2"},
		Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: "u2", NodeName: "n1", Containers: []gpuv1alpha1.ContainerAllocation{
			{Name: "main", Kind: gpuv1alpha1.ContainerApp, Devices: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-a", MemoryMiB: 128, Cores: 10}}},
		}},
	})
	return v
}

func TestCollector(t *testing.T) {
	want := `
# HELP tessera_allocation_cores Compute given to a container on one GPU, in percent of one GPU; 0 means no limit.
# TYPE tessera_allocation_cores gauge
tessera_allocation_cores{container="main",namespace="ns",pod="p",uuid="GPU-a"} 40
# HELP tessera_allocation_memory_bytes GPU memory given to a container on one GPU.
# TYPE tessera_allocation_memory_bytes gauge
tessera_allocation_memory_bytes{container="main",namespace="ns",pod="p",uuid="GPU-a"} 4.02653184e+08
# HELP tessera_gpu_cordoned 1 when the administrator cordoned the GPU from new allocations.
# TYPE tessera_gpu_cordoned gauge
tessera_gpu_cordoned{index="0",model="A100",node="n1",uuid="GPU-a"} 0
tessera_gpu_cordoned{index="1",model="A100",node="n1",uuid="GPU-b"} 1
# HELP tessera_gpu_cores_allocated Compute of the GPU held by the pods placed on it, in percent of one GPU.
# TYPE tessera_gpu_cores_allocated gauge
tessera_gpu_cores_allocated{index="0",model="A100",node="n1",uuid="GPU-a"} 40
tessera_gpu_cores_allocated{index="1",model="A100",node="n1",uuid="GPU-b"} 0
# HELP tessera_gpu_healthy 1 when the GPU is healthy, 0 when it reported an error.
# TYPE tessera_gpu_healthy gauge
tessera_gpu_healthy{index="0",model="A100",node="n1",uuid="GPU-a"} 1
tessera_gpu_healthy{index="1",model="A100",node="n1",uuid="GPU-b"} 0
# HELP tessera_gpu_memory_allocated_bytes Memory of the GPU held by the pods placed on it.
# TYPE tessera_gpu_memory_allocated_bytes gauge
tessera_gpu_memory_allocated_bytes{index="0",model="A100",node="n1",uuid="GPU-a"} 4.02653184e+08
tessera_gpu_memory_allocated_bytes{index="1",model="A100",node="n1",uuid="GPU-b"} 0
# HELP tessera_gpu_memory_capacity_bytes Memory of the GPU that may be allocated, after the device plugin's scaling.
# TYPE tessera_gpu_memory_capacity_bytes gauge
tessera_gpu_memory_capacity_bytes{index="0",model="A100",node="n1",uuid="GPU-a"} 1.073741824e+09
tessera_gpu_memory_capacity_bytes{index="1",model="A100",node="n1",uuid="GPU-b"} 2.147483648e+09
# HELP tessera_gpu_shares_in_use Number of containers holding the GPU at once.
# TYPE tessera_gpu_shares_in_use gauge
tessera_gpu_shares_in_use{index="0",model="A100",node="n1",uuid="GPU-a"} 2
tessera_gpu_shares_in_use{index="1",model="A100",node="n1",uuid="GPU-b"} 0
# HELP tessera_gpunode_heartbeat_timestamp_seconds Time of the device plugin's last heartbeat, in seconds since the epoch.
# TYPE tessera_gpunode_heartbeat_timestamp_seconds gauge
tessera_gpunode_heartbeat_timestamp_seconds{node="n1"} 1.7e+09
`
	names := []string{"tessera_allocation_cores", "tessera_allocation_memory_bytes", "tessera_gpu_cordoned", "tessera_gpu_cores_allocated",
		"tessera_gpu_healthy", "tessera_gpu_memory_allocated_bytes", "tessera_gpu_memory_capacity_bytes", "tessera_gpu_shares_in_use",
		"tessera_gpunode_heartbeat_timestamp_seconds"}
	if err := testutil.CollectAndCompare(NewCollector(testView()), strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

func TestCollectorForgetsWhatIsGone(t *testing.T) {
	v := testView()
	v.Release("u1")
	v.Release("u2")
	v.DeleteGPUNode("n1")
	if n := testutil.CollectAndCount(NewCollector(v)); n != 0 {
		t.Errorf("%d series left after every GPU and pod went", n)
	}
}

func TestMetricNamesLint(t *testing.T) {
	registry := prometheus.NewRegistry()
	requests, err := NewRequests(registry)
	if err != nil {
		t.Fatal(err)
	}
	registry.MustRegister(NewCollector(testView()))
	requests.Total.WithLabelValues(VerbFilter, ResultSuccess).Inc()
	requests.Duration.WithLabelValues(VerbFilter).Observe(0.001)
	requests.BindQueueWait.Observe(0.5)
	families, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(families) != 14 {
		t.Errorf("gathered %d metric families, want 14", len(families))
	}
	problems, err := promlint.NewWithMetricFamilies(families).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

func TestStateCollectorExportsWhatTheClaimsHold(t *testing.T) {
	devices := []gpuv1alpha1.GPUDevice{
		{UUID: "GPU-a", Index: 0, Model: "NVIDIA H100", MemoryMiB: 81920, Cores: 100, ShareLimit: 4, Health: gpuv1alpha1.GPUHealthy},
		{UUID: "GPU-b", Index: 1, Model: "NVIDIA H100", MemoryMiB: 81920, Cores: 100, ShareLimit: 4, Health: gpuv1alpha1.GPUUnhealthy},
	}
	c := NewStateCollector("n1", func() []gpuv1alpha1.GPUDevice { return devices }, func() []string { return []string{"GPU-b"} },
		func() map[string]Usage {
			return map[string]Usage{"GPU-a": {MemoryBytes: 30 << 30, Cores: 40, Shares: 2}}
		})
	want := `
# HELP tessera_gpu_memory_allocated_bytes Memory of the GPU held by the ResourceClaims allocated on it.
# TYPE tessera_gpu_memory_allocated_bytes gauge
tessera_gpu_memory_allocated_bytes{index="0",model="NVIDIA H100",node="n1",uuid="GPU-a"} 3.221225472e+10
tessera_gpu_memory_allocated_bytes{index="1",model="NVIDIA H100",node="n1",uuid="GPU-b"} 0
# HELP tessera_gpu_cores_allocated Compute of the GPU held by the ResourceClaims allocated on it, in percent of one GPU.
# TYPE tessera_gpu_cores_allocated gauge
tessera_gpu_cores_allocated{index="0",model="NVIDIA H100",node="n1",uuid="GPU-a"} 40
tessera_gpu_cores_allocated{index="1",model="NVIDIA H100",node="n1",uuid="GPU-b"} 0
# HELP tessera_gpu_shares_in_use Shares of the GPU held by the ResourceClaims allocated on it.
# TYPE tessera_gpu_shares_in_use gauge
tessera_gpu_shares_in_use{index="0",model="NVIDIA H100",node="n1",uuid="GPU-a"} 2
tessera_gpu_shares_in_use{index="1",model="NVIDIA H100",node="n1",uuid="GPU-b"} 0
# HELP tessera_gpu_memory_capacity_bytes Memory of the GPU that may be allocated, after the node daemon's scaling.
# TYPE tessera_gpu_memory_capacity_bytes gauge
tessera_gpu_memory_capacity_bytes{index="0",model="NVIDIA H100",node="n1",uuid="GPU-a"} 8.589934592e+10
tessera_gpu_memory_capacity_bytes{index="1",model="NVIDIA H100",node="n1",uuid="GPU-b"} 8.589934592e+10
# HELP tessera_gpu_healthy 1 when the GPU is healthy, 0 when it reported an error.
# TYPE tessera_gpu_healthy gauge
tessera_gpu_healthy{index="0",model="NVIDIA H100",node="n1",uuid="GPU-a"} 1
tessera_gpu_healthy{index="1",model="NVIDIA H100",node="n1",uuid="GPU-b"} 0
# HELP tessera_gpu_cordoned 1 when the administrator cordoned the GPU from new allocations.
# TYPE tessera_gpu_cordoned gauge
tessera_gpu_cordoned{index="0",model="NVIDIA H100",node="n1",uuid="GPU-a"} 0
tessera_gpu_cordoned{index="1",model="NVIDIA H100",node="n1",uuid="GPU-b"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "tessera_gpu_memory_allocated_bytes", "tessera_gpu_cores_allocated",
		"tessera_gpu_shares_in_use", "tessera_gpu_memory_capacity_bytes", "tessera_gpu_healthy", "tessera_gpu_cordoned"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(c); n != 16 {
		t.Errorf("%d series, want 8 families for each of 2 GPUs", n)
	}

}

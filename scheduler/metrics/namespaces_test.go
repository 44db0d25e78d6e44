package metrics

import (
	"math"
	"strings"
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/quota"
)

// TestStateNamespaces pins the per-namespace quota series: what each
// namespace holding GPUs uses, and the hard limits of those with quotas,
// a namespace with a quota and no GPUs included.
func TestStateNamespaces(t *testing.T) {
	quotas := quota.Fixed{
		"ns":    {MemoryMiB: quota.Limit{Hard: 1024, Set: true}, GPUs: quota.Limit{Hard: math.MaxInt64, Set: true}},
		"empty": {Cores: quota.Limit{Hard: 200, Set: true}},
	}
	got := stateTextWith(t, testView(), StateOptions{Quotas: quotas})
	want := `# HELP tessera_namespace_gpu_memory_used_bytes GPU memory the namespace's pods hold, as the scheduler counts its GPU quota.
# TYPE tessera_namespace_gpu_memory_used_bytes gauge
tessera_namespace_gpu_memory_used_bytes{namespace="empty"} 0
tessera_namespace_gpu_memory_used_bytes{namespace="ns"} 4.02653184e+08
# HELP tessera_namespace_gpu_memory_hard_bytes Hard limit of the namespace's unscoped ResourceQuotas on GPU memory, the tightest of them.
# TYPE tessera_namespace_gpu_memory_hard_bytes gauge
tessera_namespace_gpu_memory_hard_bytes{namespace="ns"} 1.073741824e+09
# HELP tessera_namespace_gpu_cores_used GPU compute in percent of one GPU the namespace's pods hold, as the scheduler counts its GPU quota.
# TYPE tessera_namespace_gpu_cores_used gauge
tessera_namespace_gpu_cores_used{namespace="empty"} 0
tessera_namespace_gpu_cores_used{namespace="ns"} 40
# HELP tessera_namespace_gpu_cores_hard Hard limit of the namespace's unscoped ResourceQuotas on GPU compute in percent of one GPU, the tightest of them.
# TYPE tessera_namespace_gpu_cores_hard gauge
tessera_namespace_gpu_cores_hard{namespace="empty"} 200
# HELP tessera_namespace_gpus_used GPU count the namespace's pods hold, as the scheduler counts its GPU quota.
# TYPE tessera_namespace_gpus_used gauge
tessera_namespace_gpus_used{namespace="empty"} 0
tessera_namespace_gpus_used{namespace="ns"} 2
# HELP tessera_namespace_gpus_hard Hard limit of the namespace's unscoped ResourceQuotas on GPU count, the tightest of them.
# TYPE tessera_namespace_gpus_hard gauge
tessera_namespace_gpus_hard{namespace="ns"} +Inf
`
	i := strings.Index(got, "# HELP tessera_namespace_")
	if i < 0 || got[i:] != want {
		t.Errorf("namespace series =\n%s\nwant\n%s", got[max(i, 0):], want)
	}
	families := parse(t, strings.NewReader(got))
	lint(t, families)
	if without := stateTextWith(t, testView(), StateOptions{}); strings.Contains(without, "tessera_namespace_") {
		t.Error("namespace series are written without quotas to read")
	}
}

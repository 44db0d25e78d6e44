package drascore

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/cputime"
	"github.com/tessera-gpu/tessera/scheduler/quota"
)

// scaleCluster is nodes nodes of 8 GPUs of 24 GiB, a third of the GPUs
// with an allocated claim of 8 GiB and 30% of its compute, every other one
// of namespace ns and the rest of namespace other; and the claim "slice"
// of 8 GiB and 30% that the benchmarks' pod asks for.
func scaleCluster(nodes int) (*draManager, []fwk.NodeInfo) {
	m := &draManager{
		claims:   claims{"slice": claim("slice", exactly("gpu", gpuv1alpha1.DRADriverName, 1, "memory", "8Gi", "cores", "30"))},
		consumed: structured.ConsumedCapacityCollection{},
	}
	infos := make([]fwk.NodeInfo, nodes)
	for n := range nodes {
		name := fmt.Sprintf("node-%d", n)
		m.slices = append(m.slices, slice(name, 1, 24, 24, 24, 24, 24, 24, 24, 24))
		for g := range 8 {
			if i := n*8 + g; i%3 == 0 {
				ns := []string{"ns", "other"}[i/3%2]
				c := allocated(m, ns, fmt.Sprintf("c-%d", i), name, g, "8Gi", "30")
				m.claims[c.Name] = c
			}
		}
		ni := framework.NewNodeInfo()
		ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		infos[n] = ni
	}
	return m, infos
}

// BenchmarkScore is what the score costs kube-scheduler per pod: PreScore,
// Score on every node and NormalizeScore.
func BenchmarkScore(b *testing.B) {
	benchmarkCycles(b, quota.Fixed(nil), func(b *testing.B, ctx context.Context, p *Plugin, pod *v1.Pod, infos []fwk.NodeInfo) {
		state := framework.NewCycleState()
		if status := p.PreScore(ctx, state, pod, infos); !status.IsSuccess() {
			b.Fatal(status)
		}
		list := make(fwk.NodeScoreList, len(infos))
		for i, ni := range infos {
			s, _ := p.Score(ctx, state, pod, ni)
			list[i] = fwk.NodeScore{Name: ni.Node().Name, Score: s}
		}
		p.NormalizeScore(ctx, state, pod, list)
	})
}

// BenchmarkQuota is what the GPU quota costs kube-scheduler per pod of a
// namespace with one: PreFilter, which counts the namespace's allocated
// claims among all of them, and Filter on every node.
func BenchmarkQuota(b *testing.B) {
	limit := quota.Limit{Hard: 1 << 40, Set: true, Quota: "gpu"}
	benchmarkCycles(b, quota.Fixed{"ns": {MemoryMiB: limit}}, func(b *testing.B, ctx context.Context, p *Plugin, pod *v1.Pod, infos []fwk.NodeInfo) {
		state := framework.NewCycleState()
		if _, status := p.PreFilter(ctx, state, pod, nil); !status.IsSuccess() {
			b.Fatal(status)
		}
		for _, ni := range infos {
			if status := p.Filter(ctx, state, pod, ni); !status.IsSuccess() {
				b.Fatal(status)
			}
		}
	})
}

// benchmarkCycles runs cycle, one pod's scheduling cycle of the plugin
// under limits, over 1,000 and 5,000 nodes of scaleCluster. cpu-ns/op is
// the process's CPU time per pod, which a busy machine does not inflate
// as it does the wall-clock ns/op.
func benchmarkCycles(b *testing.B, limits quota.Fixed, cycle func(*testing.B, context.Context, *Plugin, *v1.Pod, []fwk.NodeInfo)) {
	for _, nodes := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			m, infos := scaleCluster(nodes)
			defaults, err := decodeArgs(nil)
			if err != nil {
				b.Fatal(err)
			}
			p := newPlugin(defaults, m, limits, nil)
			pod := podOf("slice")
			ctx := context.Background()
			b.ReportAllocs()
			defer cputime.Report(b, cputime.Process)()
			for b.Loop() {
				cycle(b, ctx, p, pod, infos)
			}
		})
	}
}

package placement

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/internal/cputime"
)

// BenchmarkFilterPrioritize measures what the extender does for one pod:
// decide for every node whether the pod fits and score the nodes that do.
// One op is one pod over the whole cluster. The cluster has 8 GPUs per node,
// with pods already placed by Fit; the cost should grow with the nodes and
// not with the pods placed.
func BenchmarkFilterPrioritize(b *testing.B) {
	fits := request(app("bench", 1, 8192, 20))
	fits.GPUPolicy = gpurequest.Binpack
	refused := request(app("bench", 8, 0, 100))
	multi := request(app("a", 1, 8192, 20), app("b", 1, 8192, 20), app("c", 2, 4096, 10))
	cases := []struct {
		nodes, pods int
		pod         string
		req         *Request
	}{
		{nodes: 5000, pods: 40000, pod: "fits", req: fits},
		{nodes: 1000, pods: 8000, pod: "fits", req: fits},
		{nodes: 5000, pods: 10000, pod: "fits", req: fits},
		{nodes: 5000, pods: 40000, pod: "refused", req: refused},
		{nodes: 5000, pods: 40000, pod: "multi", req: multi},
	}
	for _, tc := range cases {
		cluster := benchCluster(b, tc.nodes, tc.pods)
		name := fmt.Sprintf("nodes=%d/pods=%d/pod=%s", tc.nodes, tc.pods, tc.pod)
		b.Run(name+"/feasible", func(b *testing.B) {
			var f Failure
			var ft Fitter
			b.ReportAllocs()
			defer cputime.Report(b, cputime.Thread)()
			for b.Loop() {
				for _, n := range cluster {
					if ft.Feasible(n, tc.req, &f) {
						_, _ = ft.Load(n, tc.req)
					}
				}
			}
		})
		b.Run(name+"/fit", func(b *testing.B) {
			b.ReportAllocs()
			defer cputime.Report(b, cputime.Thread)()
			for b.Loop() {
				for _, n := range cluster {
					if _, failure := Fit(n, tc.req); failure == nil {
						_, _ = new(Fitter).Load(n, tc.req)
					}
				}
			}
		})
	}
}

// BenchmarkFitSearch measures one placement that greedy misses and the exact
// search finds, on an 8-GPU node.
func BenchmarkFitSearch(b *testing.B) {
	n := node(idle(8)...)
	for i := range n.Devices {
		n.Devices[i].MemoryMiB = 6000
		if i%2 == 1 {
			n.Devices[i].MemoryMiB = 24000
			n.Devices[i].UsedMemoryMiB, n.Devices[i].UsedCores, n.Devices[i].UsedShares = 12000, 50, 1
		}
	}
	req := request(app("a", 4, 5000, 80), app("b", 4, 6000, 10))
	if e := (engine{}); !e.place(n, req, true) || e.steps == 0 {
		b.Fatalf("the case does not exercise the search")
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, f := Fit(n, req); f != nil {
			b.Fatal(f)
		}
	}
}

// benchCluster builds nodes of 8 A100s and places pods round robin with Fit,
// a mix of one- and two-GPU pods of 2 to 16 GiB and 0 to 30 cores.
func benchCluster(b *testing.B, nodes, pods int) []*Node {
	b.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	cluster := make([]*Node, nodes)
	for i := range cluster {
		cluster[i] = &Node{Name: fmt.Sprintf("node-%d", i), Devices: idle(8)}
		for g := range cluster[i].Devices {
			cluster[i].Devices[g].UUID = fmt.Sprintf("GPU-%d-%d", i, g)
			cluster[i].Devices[g].NUMANode = int32(g / 4)
		}
	}
	for p := range pods {
		c := app("c", int32(1+r.IntN(8)/7), int64(2048*(1+r.IntN(8))), int32(10*r.IntN(4)))
		req := request(c)
		n := cluster[p%nodes]
		got, failure := Fit(n, req)
		if failure != nil {
			b.Fatalf("placing pod %d on %s: %v", p, n.Name, failure)
		}
		n.Add(Holds(got))
	}
	return cluster
}

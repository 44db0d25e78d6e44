package drabench

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"k8s.io/dynamic-resource-allocation/structured"
)

// benchNodes is the cluster's size: 5,000 nodes, the largest measured,
// which hold the most claims measured, 40,000, in either model.
const benchNodes = 5000

// BenchmarkScheduling times, per model and count of claims already
// allocated, what kube-scheduler's DynamicResources plugin does for one
// pod asking for 8 GiB and 30 cores of one GPU:
//
//   - filter=free-node: Allocate on one node that holds no claim yet, with
//     the allocator PreFilter built (untimed), as Filter does for each
//     node;
//   - filter=free-node-indexed: the same without the allocated state's set
//     of shares, which the allocator walks for each untouched shared
//     device: what indexing it by device would save;
//   - filter=full-node: the same on a node with no room left;
//   - prefilter: gathering the allocated state and building the
//     allocator, once per pod;
//   - pod: prefilter, then Allocate on every node, as with
//     percentageOfNodesToScore: 100 (Tessera's shipped configuration);
//     run it with a small -benchtime, each op takes seconds.
func BenchmarkScheduling(b *testing.B) {
	ctx := context.Background()
	// The counts of claims already allocated.
	claimCounts := []int{0, 5000, 10000, 20000, 40000}
	capacity, err := capacityModel()
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range []model{capacity, partitionsModel()} {
		b.Run("model="+m.name, func(b *testing.B) {
			all, err := newCluster(ctx, m, benchNodes, claimCounts[len(claimCounts)-1])
			if err != nil {
				b.Fatal(err)
			}
			for _, claims := range claimCounts {
				c := all.withClaims(claims)
				b.Run(fmt.Sprintf("claims=%d", claims), func(b *testing.B) {
					state := c.tracked.gather()
					b.Run("filter=free-node", func(b *testing.B) { benchFilter(ctx, b, c, state, c.freeNodes(), true) })
					if state.AllocatedSharedDeviceIDs.Len() > 0 {
						b.Run("filter=free-node-indexed", func(b *testing.B) {
							benchFilter(ctx, b, c, withoutShareSet(state), c.freeNodes(), true)
						})
					}
					if full := c.fullNodes(); len(full) > 0 {
						b.Run("filter=full-node", func(b *testing.B) { benchFilter(ctx, b, c, state, full, false) })
					}
					b.Run("prefilter", func(b *testing.B) { benchPreFilter(ctx, b, c) })
					b.Run(fmt.Sprintf("pod=%d-nodes", benchNodes), func(b *testing.B) { benchPod(ctx, b, c) })
				})
			}
		})
	}
}

// benchFilter times Allocate on one node after another of the given
// ones, all alike, as Filter calls it for each node with the allocator
// PreFilter built for the pod: a new allocator (untimed) whenever the
// nodes run out, since an allocator caches what it computed of a node.
//
// The allocator only reads the state, so the pods share one copy.
func benchFilter(ctx context.Context, b *testing.B, c *cluster, state structured.AllocatedState, nodes []int, fits bool) {
	var (
		cpu cpuClock
		a   structured.Allocator
		err error
		i   int
	)
	settle()
	b.ReportAllocs()
	for b.Loop() {
		if i%len(nodes) == 0 {
			b.StopTimer()
			if a, err = c.newAllocatorFor(ctx, state); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		n := c.nodes[nodes[i%len(nodes)]]
		i++
		cpu.start(b)
		results, err := a.Allocate(ctx, n, c.podClaims())
		cpu.stop(b)
		if err != nil || (results != nil) != fits {
			b.Fatalf("allocating on %s: %v, %v; want it to fit: %v", n.Name, results, err, fits)
		}
	}
	cpu.report(b)
}

// settle collects the garbage of the set-up, so that its collection is
// not timed.
func settle() { runtime.GC() }

func benchPreFilter(ctx context.Context, b *testing.B, c *cluster) {
	var cpu cpuClock
	settle()
	b.ReportAllocs()
	for b.Loop() {
		cpu.start(b)
		_, err := c.newAllocator(ctx)
		cpu.stop(b)
		if err != nil {
			b.Fatal(err)
		}
	}
	cpu.report(b)
}

func benchPod(ctx context.Context, b *testing.B, c *cluster) {
	var cpu cpuClock
	settle()
	b.ReportAllocs()
	for b.Loop() {
		cpu.start(b)
		feasible, err := c.filterAll(ctx)
		cpu.stop(b)
		if err != nil {
			b.Fatal(err)
		}
		if want := len(c.nodes) - len(c.allocated)/c.perNode(); feasible != want {
			b.Fatalf("the pod fits %d nodes, want %d", feasible, want)
		}
	}
	cpu.report(b)
}

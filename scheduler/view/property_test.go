package view

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// TestIncrementalUsageMatchesRecount applies random sequences of informer
// events and binds and checks, after each, that every GPU's usage equals a
// recount of the holds of the pods the view has on it: nothing is counted
// twice or left behind.
func TestIncrementalUsageMatchesRecount(t *testing.T) {
	nodes := []string{"n0", "n1", "n2"}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		v := New()
		allocations := map[types.UID]*gpuv1alpha1.GPUAllocation{}
		for step := range 200 {
			node := nodes[rng.IntN(len(nodes))]
			pod := types.UID(fmt.Sprintf("pod%d", rng.IntN(12)))
			c := containers(int64(1+rng.IntN(8))*1000, int32(rng.IntN(5))*10, fmt.Sprintf("%s-gpu%d", node, rng.IntN(2)))
			switch rng.IntN(8) {
			case 0:
				v.SetGPUNode(gpuNode(node, 2))
			case 1:
				v.DeleteGPUNode(node)
			case 2, 3:
				a := allocation(string(pod), types.UID(fmt.Sprintf("a%d-%d", seed, step)), pod, node, c)
				allocations[pod] = a
				v.Place(a)
			case 4:
				v.Reserve(pod, "ns", string(pod), node, now, fitOn(c, nil))
			case 5:
				v.Release(pod)
			case 6:
				if a, ok := allocations[pod]; ok {
					v.ReleaseAllocation(a)
				}
			case 7:
				v.Reserve(pod, "ns", string(pod), node, now, fitOn(nil, fmt.Errorf("no fit")))
			}
			checkRecount(t, v, seed, step)
			if t.Failed() {
				return
			}
		}
	}
}

func checkRecount(t *testing.T, v *View, seed uint64, step int) {
	t.Helper()
	v.mu.RLock()
	defer v.mu.RUnlock()
	for name, n := range v.nodes {
		fresh := placement.Node{Name: name, Devices: append([]placement.Device(nil), n.Placement.Devices...)}
		for i := range fresh.Devices {
			d := &fresh.Devices[i]
			d.UsedMemoryMiB, d.UsedCores, d.UsedShares = 0, 0, 0
		}
		for uid, p := range n.pods {
			if v.pods[uid] != p || p.Node != name {
				t.Errorf("seed %d step %d: node %s lists pod %s that the view has elsewhere", seed, step, name, uid)
			}
			fresh.Add(p.holds)
		}
		for i := range fresh.Devices {
			if got, want := n.Placement.Devices[i], fresh.Devices[i]; got != want {
				t.Errorf("seed %d step %d: %s usage %d MiB/%d cores/%d shares, recount %d/%d/%d", seed, step,
					got.UUID, got.UsedMemoryMiB, got.UsedCores, got.UsedShares, want.UsedMemoryMiB, want.UsedCores, want.UsedShares)
			}
		}
	}
	for uid, p := range v.pods {
		if n, ok := v.nodes[p.Node]; !ok || n.pods[uid] != p {
			t.Errorf("seed %d step %d: pod %s is not on its node %s", seed, step, uid, p.Node)
		}
	}
}

// TestReadWithLookupFindsWhatReadFinds changes the view at random and, after
// each change, reads random lists of names with one Lookup kept throughout:
// every name must be the node Read finds, though nodes come and go and the
// lists change length and order.
// TestReadWithLookupFindsWhatReadFinds also passes names as the extender
// does, sharing one buffer that the next call overwrites: the lookup must
// keep names of its own. All names have the same length, so a lookup that
// kept the caller's would find its old names equal to any new ones.
func TestReadWithLookupFindsWhatReadFinds(t *testing.T) {
	names := []string{"n0", "n1", "n2", "n9"}
	var buf []byte
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 11))
		v := New()
		var l Lookup
		for step := range 100 {
			node := names[rng.IntN(3)]
			pod := types.UID(fmt.Sprintf("pod%d", rng.IntN(4)))
			switch rng.IntN(4) {
			case 0:
				v.SetGPUNode(gpuNode(node, 2))
			case 1:
				v.DeleteGPUNode(node)
			case 2:
				v.Place(allocation(string(pod), types.UID(fmt.Sprintf("a%d", step)), pod, node, containers(1000, 10, node+"-gpu0")))
			case 3:
				v.Release(pod)
			}
			list := make([]string, rng.IntN(6))
			buf = buf[:0]
			for range list {
				buf = append(buf, names[rng.IntN(len(names))]...)
			}
			for i := range list {
				list[i] = unsafe.String(&buf[2*i], 2)
			}
			var got, want []*Node
			// Read first: ReadWith may arrange the nodes once it has read them.
			v.Read(list, "", func(_ string, n *Node) { want = append(want, n) })
			v.ReadWith(&l, list, "", func(_ string, n *Node) { got = append(got, n) })
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d step %d: ReadWith found %v for %v, Read %v", seed, step, got, list, want)
			}
		}
	}
}

// TestReadParallelFindsWhatReadFinds reads lists long enough for several
// workers, with one Lookup kept throughout while nodes come and go: every
// name must be read once, as the node Read finds, by the worker whose run
// of the list holds it, and the workers' runs must follow one another.
func TestReadParallelFindsWhatReadFinds(t *testing.T) {
	const nodes = 3 * MinNodesPerWorker
	names := make([]string, nodes)
	for i := range names {
		names[i] = fmt.Sprintf("node-%04d", i)
	}
	rng := rand.New(rand.NewPCG(5, 9))
	v := New()
	var l Lookup
	for step := range 40 {
		for range 50 {
			if node := names[rng.IntN(nodes)]; rng.IntN(3) == 0 {
				v.DeleteGPUNode(node)
			} else {
				v.SetGPUNode(gpuNode(node, 1))
			}
		}
		list := slices.Clone(names[:rng.IntN(nodes+1)])
		rng.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
		var want []*Node
		v.Read(list, "", func(_ string, n *Node) { want = append(want, n) })
		got := make([]*Node, len(list))
		worker := make([]int, len(list))
		calls := make([]int, len(list))
		var mu sync.Mutex
		v.ReadParallel(&l, list, "", 4, func(w, i int, n *Node) {
			mu.Lock()
			defer mu.Unlock()
			got[i], worker[i] = n, w
			calls[i]++
		})
		for i := range list {
			if calls[i] != 1 || got[i] != want[i] {
				t.Fatalf("step %d: name %d (%s) read %d times as %p, Read found %p", step, i, list[i], calls[i], got[i], want[i])
			}
			if i > 0 && worker[i] != worker[i-1] && worker[i] != worker[i-1]+1 {
				t.Fatalf("step %d: name %d read by worker %d after worker %d", step, i, worker[i], worker[i-1])
			}
		}
		if workers := worker[len(worker)-1] + 1; len(list) > 0 && workers != max(1, min(4, len(list)/MinNodesPerWorker)) {
			t.Fatalf("step %d: %d names read by %d workers", step, len(list), workers)
		}
	}
}

// TestReadParallelPanicsInTheCaller makes fn panic on another worker's
// goroutine: the panic must reach the caller, as it would had fn run
// there, and leave the view unlocked.
func TestReadParallelPanicsInTheCaller(t *testing.T) {
	v := New()
	names := make([]string, 2*MinNodesPerWorker)
	for i := range names {
		names[i] = fmt.Sprintf("node-%04d", i)
		v.SetGPUNode(gpuNode(names[i], 1))
	}
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want the worker's panic", r)
			}
		}()
		v.ReadParallel(nil, names, "", 2, func(w, _ int, _ *Node) {
			if w == 1 {
				panic("boom")
			}
		})
		t.Fatal("ReadParallel returned")
	}()
	v.SetGPUNode(gpuNode(names[0], 2)) // would block if the read lock were held
}

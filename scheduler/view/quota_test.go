package view

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/quota"
)

func memoryLimit(mib int64) quota.Limits {
	return quota.Limits{MemoryMiB: quota.Limit{Hard: mib, Set: true, Quota: "gpu"}}
}

// inNamespace returns a with namespace ns.
func inNamespace(ns string, a *gpuv1alpha1.GPUAllocation) *gpuv1alpha1.GPUAllocation {
	a.Namespace = ns
	return a
}

func TestNamespaceUse(t *testing.T) {
	v := New()
	v.SetGPUNode(gpuNode("n1", 2))
	v.SetGPUNode(gpuNode("n2", 2))
	wantUsed := func(step, ns string, want placement.Use) {
		t.Helper()
		if got := v.Used(ns); got != want {
			t.Errorf("%s: Used(%s) = %+v, want %+v", step, ns, got, want)
		}
	}
	a1 := inNamespace("a", allocation("p1", "a1", "u1", "n1", containers(10000, 30, "n1-gpu0", "n1-gpu1")))
	v.Place(a1)
	v.Place(inNamespace("b", allocation("p2", "a2", "u2", "n1", containers(80000, 0, "n1-gpu0"))))
	wantUsed("placed", "a", placement.Use{MemoryMiB: 20000, Cores: 60, GPUs: 2})
	wantUsed("placed", "b", placement.Use{MemoryMiB: 80000, Cores: 100, GPUs: 1})

	// A bind's reservation and the allocation it writes count once.
	if _, _, err := v.Reserve("u3", "a", "p3", "n2", now, fitOn(containers(5000, 0, "n2-gpu0"), nil)); err != nil {
		t.Fatal(err)
	}
	wantUsed("reserved", "a", placement.Use{MemoryMiB: 25000, Cores: 60, GPUs: 3})
	v.Place(inNamespace("a", allocation("p3", "a3", "u3", "n2", containers(5000, 0, "n2-gpu0"))))
	wantUsed("reservation replaced by its allocation", "a", placement.Use{MemoryMiB: 25000, Cores: 60, GPUs: 3})
	if got := v.UsedWithout("a", "u3"); got != (placement.Use{MemoryMiB: 20000, Cores: 60, GPUs: 2}) {
		t.Errorf("UsedWithout(a, u3) = %+v, want without its 5000 MiB", got)
	}
	if got := v.UsedWithout("b", "u3"); got != v.Used("b") {
		t.Errorf("UsedWithout(b, u3) = %+v, want all of b: the pod is a's", got)
	}

	v.ReleaseAllocation(a1)
	v.Release("u2")
	wantUsed("released", "a", placement.Use{MemoryMiB: 5000, GPUs: 1})
	wantUsed("released", "b", placement.Use{})
	seen := map[string]placement.Use{}
	v.EachNamespace(func(ns string, used placement.Use) { seen[ns] = used })
	if len(seen) != 1 || seen["a"] != v.Used("a") {
		t.Errorf("EachNamespace saw %+v, want only a", seen)
	}
}

// TestWholeGPUCountedOnceItsNodeIsKnown pins that an allocation seen before
// its node's GPUNode counts its whole GPU as 100 cores once the GPUNode
// comes, and takes off what it was counted when it goes.
func TestWholeGPUCountedOnceItsNodeIsKnown(t *testing.T) {
	v := New()
	v.Place(allocation("p", "a1", "u1", "n1", containers(80000, 0, "n1-gpu0")))
	if got := v.Used("ns"); got != (placement.Use{MemoryMiB: 80000, GPUs: 1}) {
		t.Errorf("before the GPUNode Used = %+v, want no cores: whether the GPU is whole is not known", got)
	}
	p, _ := v.Pod("u1")
	v.SetGPUNode(gpuNode("n1", 1))
	if got := v.Used("ns"); got != (placement.Use{MemoryMiB: 80000, Cores: 100, GPUs: 1}) {
		t.Errorf("after the GPUNode Used = %+v, want the whole GPU's 100 cores", got)
	}
	if p.Use().Cores != 0 {
		t.Errorf("the pod read before was changed: %+v", p.Use())
	}
	v.Release("u1")
	if got := v.Used("ns"); !got.IsZero() {
		t.Errorf("after release Used = %+v, want nothing", got)
	}
}

func TestReserveWithinQuota(t *testing.T) {
	v := New()
	v.SetGPUNode(gpuNode("n1", 2))
	v.Place(allocation("held", "a0", "u0", "n1", containers(30000, 0, "n1-gpu0")))
	// An interrupted bind of the pod left a reservation: it is replaced,
	// not counted beside the new one.
	if _, _, err := v.Reserve("u1", "ns", "p", "n1", now, fitOn(containers(5000, 0, "n1-gpu1"), nil)); err != nil {
		t.Fatal(err)
	}
	before := v.Used("ns")

	_, err := v.ReserveWithin(memoryLimit(40000), "u1", "ns", "p", "n1", now, fitOn(containers(20000, 0, "n1-gpu1"), nil))
	var over *quota.ExceededError
	if !errors.As(err, &over) || over.Reason != "namespace ns would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/memory (GPU memory in MiB): used 30000, asked 20000, limit 40000" ||
		over.Asked != (placement.Use{MemoryMiB: 20000, GPUs: 1}) {
		t.Fatalf("ReserveWithin over the limit = %v, want the quota's reason", err)
	}
	if got := v.Used("ns"); got != before {
		t.Errorf("after the refusal Used = %+v, want %+v as before", got, before)
	}
	if got := usageOf(t, v, "n1", 1); got.memory != 5000 {
		t.Errorf("after the refusal GPU 1 holds %d MiB, want the old reservation's 5000", got.memory)
	}
	if _, err := v.ReserveWithin(memoryLimit(40000), "u1", "ns", "p", "n1", now, fitOn(containers(10000, 0, "n1-gpu1"), nil)); err != nil {
		t.Fatalf("ReserveWithin at the limit = %v, want it placed", err)
	}
	if got := v.Used("ns"); got.MemoryMiB != 40000 {
		t.Errorf("Used = %+v, want 40000 MiB", got)
	}
	if _, err := v.ReserveWithin(memoryLimit(40000), "u2", "other", "p", "n1", now, fitOn(containers(10000, 0, "n1-gpu1"), nil)); err != nil {
		t.Errorf("another namespace's pod = %v, want it placed: the limit is ns's", err)
	}
}

// TestReserveWithinConcurrently reserves pods of one namespace on many
// nodes at once: no more pass than the limit has room for.
func TestReserveWithinConcurrently(t *testing.T) {
	const nodes, perNode, room = 8, 4, 5
	v := New()
	for i := range nodes {
		v.SetGPUNode(gpuNode(fmt.Sprintf("n%d", i), 1))
	}
	limits := memoryLimit(room * 1000)
	var wg sync.WaitGroup
	var mu sync.Mutex
	placed := 0
	for i := range nodes * perNode {
		node := fmt.Sprintf("n%d", i%nodes)
		wg.Go(func() {
			uid := types.UID(fmt.Sprintf("u%d", i))
			_, err := v.ReserveWithin(limits, uid, "ns", string(uid), node, now, fitOn(containers(1000, 0, node+"-gpu0"), nil))
			if err == nil {
				mu.Lock()
				placed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if placed != room || v.Used("ns").MemoryMiB != room*1000 {
		t.Errorf("%d pods placed, %+v used; want %d within the limit", placed, v.Used("ns"), room)
	}
}

// TestQuotaPerNode pins the admission order's quota steps: the least a
// pod asks closes every node when it is over, and a percentage of memory
// fits on a node of small GPUs and not on one of large GPUs.
func TestQuotaPerNode(t *testing.T) {
	v := New()
	small := gpuNode("t4", 1)
	small.Status.Devices[0].MemoryMiB = 15360
	v.SetGPUNode(small)
	v.SetGPUNode(gpuNode("a100", 1))
	v.Place(allocation("held", "a0", "u0", "a100", containers(10000, 20, "a100-gpu0")))
	rules := Rules{Quotas: quota.Fixed{"ns": {MemoryMiB: quota.Limit{Hard: 30000, Set: true, Quota: "gpu"}, GPUs: quota.Limit{Hard: 2, Set: true, Quota: "gpu"}}}}
	half, err := placement.NewRequest([]gpurequest.ContainerRequest{{Name: "c", Kind: gpuv1alpha1.ContainerApp, Count: 1, MemoryPercent: 50}}, gpurequest.Selection{}, gpurequest.Spread)
	if err != nil {
		t.Fatal(err)
	}
	q := rules.Quota(v, "ns", "new", half)
	if !q.Closed().OK() {
		t.Fatalf("Closed = %q, want room for one more GPU", q.Closed())
	}
	var ft placement.Fitter
	answers := map[string]Reason{}
	v.Read([]string{"t4", "a100"}, "", func(name string, n *Node) {
		_, answers[name] = q.Exceeded(&ft, &n.Placement, half)
	})
	if !answers["t4"].OK() {
		t.Errorf("on a T4 = %q, want half of its 15360 MiB to fit 20000 MiB left", answers["t4"])
	}
	if want := Reason("namespace ns would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/memory (GPU memory in MiB): used 10000, asked 40000, limit 30000"); answers["a100"] != want {
		t.Errorf("on an A100 = %q, want %q", answers["a100"], want)
	}

	two, err := placement.NewRequest([]gpurequest.ContainerRequest{{Name: "c", Kind: gpuv1alpha1.ContainerApp, Count: 2, MemoryMiB: 1000}}, gpurequest.Selection{}, gpurequest.Spread)
	if err != nil {
		t.Fatal(err)
	}
	q = rules.Quota(v, "ns", "new", two)
	if want := Reason("namespace ns would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/gpus (GPUs): used 1, asked 2, limit 2"); q.Closed() != want {
		t.Errorf("Closed for two GPUs = %q, want %q", q.Closed(), want)
	}
	if q := (Rules{}).Quota(v, "ns", "new", two); !q.Closed().OK() || q.Limits.Enforced() {
		t.Errorf("without quotas the quota is %+v, want none enforced", q)
	}
}

// TestNamespaceUseMatchesPods changes the view at random, reserving within
// random limits too: what each namespace is counted to use is always the
// sum of what its pods hold.
func TestNamespaceUseMatchesPods(t *testing.T) {
	nodes, namespaces := []string{"n0", "n1"}, []string{"a", "b"}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 21))
		v := New()
		for step := range 100 {
			node := nodes[rng.IntN(len(nodes))]
			ns := namespaces[rng.IntN(len(namespaces))]
			pod := types.UID(fmt.Sprintf("pod%d", rng.IntN(8)))
			c := containers(int64(1+rng.IntN(8))*10000, int32(rng.IntN(3))*50, fmt.Sprintf("%s-gpu%d", node, rng.IntN(2)))
			switch rng.IntN(6) {
			case 0:
				v.SetGPUNode(gpuNode(node, 2))
			case 1:
				v.DeleteGPUNode(node)
			case 2:
				v.Place(inNamespace(ns, allocation(string(pod), types.UID(fmt.Sprintf("a%d", step)), pod, node, c)))
			case 3:
				v.ReserveWithin(memoryLimit(int64(rng.IntN(4))*50000), pod, ns, string(pod), node, now, fitOn(c, nil))
			case 4:
				v.Release(pod)
			case 5:
				v.Reserve(pod, ns, string(pod), node, now, fitOn(c, nil))
			}
			want := map[string]placement.Use{}
			v.Each(nil, func(p *Pod) { want[p.Namespace] = want[p.Namespace].Add(p.Use()) })
			for _, ns := range namespaces {
				if got := v.Used(ns); got != want[ns] {
					t.Fatalf("seed %d step %d: Used(%s) = %+v, its pods hold %+v", seed, step, ns, got, want[ns])
				}
			}
		}
	}
}

package fitgate

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// cluster is a view with an index over it.
type cluster struct {
	clock *clocktesting.FakeClock
	view  *view.View
	index *Index
	pods  int
}

func newCluster() *cluster {
	clk := clocktesting.NewFakeClock(start)
	v := view.New()
	return &cluster{clock: clk, view: v, index: New(v, view.Rules{HeartbeatMaxAge: 1000 * time.Hour}, clk)}
}

// addNode adds a node with a GPU of each memory, its heartbeat fresh.
func (c *cluster) addNode(name string, memoryMiB ...int64) {
	gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for i, m := range memoryMiB {
		gn.Status.Devices = append(gn.Status.Devices, gpuv1alpha1.GPUDevice{
			UUID: fmt.Sprintf("%s-GPU-%d", name, i), Index: int32(i), Model: "H100", MemoryMiB: m, Cores: 100, ShareLimit: 4, Health: gpuv1alpha1.GPUHealthy,
		})
	}
	c.view.SetGPUNode(gn)
	c.view.SetLease(name, c.clock.Now())
}

// place places a pod asking for req on the node, if it fits there, and
// returns its UID.
func (c *cluster) place(node string, req *placement.Request) (types.UID, bool) {
	c.pods++
	uid := types.UID(fmt.Sprintf("pod-%d", c.pods))
	_, _, err := c.view.Reserve(uid, "default", string(uid), node, c.clock.Now(), func(n *view.Node) ([]gpuv1alpha1.ContainerAllocation, error) {
		a, f := placement.Fit(&n.Placement, req)
		if f != nil {
			return nil, f
		}
		return a, nil
	})
	return uid, err == nil
}

// request is one container asking for count GPUs with memoryMiB each.
func request(t testing.TB, count int32, memoryMiB int64) *placement.Request {
	t.Helper()
	req, err := placement.NewRequest([]gpurequest.ContainerRequest{{Name: "main", Kind: gpuv1alpha1.ContainerApp, Count: count, MemoryMiB: memoryMiB}}, gpurequest.Selection{}, gpurequest.Spread)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// setUp returns a cluster that setup, if set, has changed, and a request
// for count GPUs with memoryMiB each.
func setUp(t *testing.T, setup func(c *cluster), count int32, memoryMiB int64) (*cluster, *placement.Request) {
	t.Helper()
	c := newCluster()
	if setup != nil {
		setup(c)
	}
	return c, request(t, count, memoryMiB)
}

// walk answers Fits by fitting req on every node of the view.
func (c *cluster) walk(req *placement.Request) bool {
	fits := false
	now := c.clock.Now()
	rules := view.Rules{HeartbeatMaxAge: 1000 * time.Hour}
	c.view.Each(func(n *view.Node) {
		if closed, _ := rules.Closed(n, now, req); closed.OK() {
			if _, f := placement.Fit(&n.Placement, req); f == nil {
				fits = true
			}
		}
	}, nil)
	return fits
}

func TestFits(t *testing.T) {
	tests := []struct {
		name           string
		setup          func(c *cluster)
		count          int32
		memoryMiB      int64
		fits, possible bool
	}{
		{name: "an empty cluster holds nothing", count: 1, memoryMiB: 1000},
		{name: "a node with room holds it", setup: func(c *cluster) { c.addNode("a", 81920) }, count: 1, memoryMiB: 40000, fits: true, possible: true},
		{name: "a full node holds it once freed", setup: func(c *cluster) {
			c.addNode("a", 81920)
			c.place("a", request(t, 1, 81920))
		}, count: 1, memoryMiB: 40000, possible: true},
		{name: "no GPU is ever large enough", setup: func(c *cluster) { c.addNode("a", 15360) }, count: 1, memoryMiB: 40000},
		{name: "a stale node holds nothing", setup: func(c *cluster) {
			c.addNode("a", 81920)
			c.clock.Step(2000 * time.Hour)
		}, count: 1, memoryMiB: 40000},
		{name: "two GPUs on two nodes do not make a pair", setup: func(c *cluster) {
			c.addNode("a", 81920, 81920)
			c.addNode("b", 81920, 81920)
			c.place("a", request(t, 1, 81920))
			c.place("b", request(t, 1, 81920))
		}, count: 2, memoryMiB: 40000, possible: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, req := setUp(t, tc.setup, tc.count, tc.memoryMiB)
			fits, possible := c.index.Fits(ShapeKey(req), req)
			if fits != tc.fits || possible != tc.possible {
				t.Errorf("Fits = %v, possible %v; want %v, %v", fits, possible, tc.fits, tc.possible)
			}
		})
	}
}

func TestFitsAfterFreeAndFill(t *testing.T) {
	c := newCluster()
	c.addNode("a", 81920)
	req := request(t, 1, 40000)
	key := ShapeKey(req)
	filler, _ := c.place("a", request(t, 1, 81920))
	if fits, _ := c.index.Fits(key, req); fits {
		t.Fatal("a full cluster fits")
	}
	c.view.Release(filler)
	if fits, _ := c.index.Fits(key, req); fits {
		t.Fatal("fits before the free signal: the index walked the nodes again")
	}
	c.index.Freed("a")
	if fits, _ := c.index.Fits(key, req); !fits {
		t.Fatal("does not fit after the free signal")
	}
	c.place("a", request(t, 1, 81920))
	if fits, _ := c.index.Fits(key, req); fits {
		t.Fatal("fits once the node filled up again")
	}
	c.clock.Step(RebuildAfter + time.Second)
	c.view.Release(types.UID(fmt.Sprintf("pod-%d", c.pods)))
	if fits, _ := c.index.Fits(key, req); !fits {
		t.Fatal("a lost free signal is not made up for after RebuildAfter")
	}
}

// pinned asks for one GPU picked by UUID, with memoryMiB of it.
func pinned(t testing.TB, uuid string, memoryMiB int64) *placement.Request {
	t.Helper()
	req, err := placement.NewRequest([]gpurequest.ContainerRequest{{Name: "main", Kind: gpuv1alpha1.ContainerApp, Count: 1, MemoryMiB: memoryMiB}},
		gpurequest.Selection{UUIDs: []string{uuid}}, gpurequest.Spread)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestWhyOfPinnedGPU(t *testing.T) {
	c := newCluster()
	c.addNode("a", 15360)
	c.addNode("b", 81920)
	c.place("a", request(t, 1, 0))
	req := pinned(t, "a-GPU-0", 1000)
	want := "1 node(s) had 0/1 of the pod's selected GPUs that fit (a-GPU-0, index 0: held whole by another pod)"
	if got := c.index.Why(ShapeKey(req), req); got != want {
		t.Errorf("Why = %q\nwant %q", got, want)
	}
}

// TestWhyOfMIGInstance pins that a pod limited to MIG instances is told
// that no instance has room, not how much memory is free: on a GPU that
// makes its instances on demand, with 1g instances at slices 0 and 1 and
// a 3g instance at 4, no place is left for another 3g instance.
func TestWhyOfMIGInstance(t *testing.T) {
	c := newCluster()
	gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	gn.Status.Devices = []gpuv1alpha1.GPUDevice{{
		UUID: "a-GPU-0", Model: "A100", MemoryMiB: 81920, Cores: 100, ShareLimit: 7, Health: gpuv1alpha1.GPUHealthy,
		MIGGeometry: &gpuv1alpha1.MIGGeometry{Profiles: []gpuv1alpha1.MIGProfile{
			{Name: "1g.10gb", ProfileID: 19, MemoryMiB: 9856, ComputePercent: 14, Placements: []gpuv1alpha1.MIGPlacement{{Start: 0, Size: 1}, {Start: 1, Size: 1}}},
			{Name: "3g.40gb", ProfileID: 9, MemoryMiB: 40192, ComputePercent: 42, Placements: []gpuv1alpha1.MIGPlacement{{Start: 0, Size: 4}, {Start: 4, Size: 4}}},
		}},
	}}
	c.view.SetGPUNode(gn)
	c.view.SetLease("a", c.clock.Now())
	mig := func(memoryMiB int64) *placement.Request {
		req, err := placement.NewRequest([]gpurequest.ContainerRequest{{Name: "main", Kind: gpuv1alpha1.ContainerApp, Count: 1, MemoryMiB: memoryMiB}},
			gpurequest.Selection{Mode: gpurequest.ModeMIG}, gpurequest.Spread)
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	for _, memoryMiB := range []int64{9000, 9000, 30000} {
		if _, ok := c.place("a", mig(memoryMiB)); !ok {
			t.Fatalf("an instance for %d MiB should fit", memoryMiB)
		}
	}
	req := mig(30000)
	got := c.index.Why(ShapeKey(req), req)
	if want := "no room for the MIG instance"; !strings.Contains(got, want) || strings.Contains(got, "MiB free") {
		t.Errorf("Why = %q; want it to say %q, not what memory is free", got, want)
	}
}

func TestWhy(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(c *cluster)
		count     int32
		memoryMiB int64
		want      string
	}{
		{name: "no node", count: 1, memoryMiB: 1000, want: "no node with GPUs that could hold the pod takes pods now"},
		{name: "memory short names the largest free", setup: func(c *cluster) {
			c.addNode("b", 81920)
			c.addNode("a", 81920)
			c.place("a", request(t, 1, 10240))
			c.place("b", request(t, 1, 10240))
		}, count: 1, memoryMiB: 76800, want: "no GPU has 76800 MiB free; the largest free is 71680 MiB on a"},
		{name: "too few GPUs names the roomiest node", setup: func(c *cluster) {
			c.addNode("a", 81920, 81920)
			c.place("a", request(t, 1, 81920))
		}, count: 2, memoryMiB: 1000, want: "1 node(s) had 1/2 GPUs that fit, 2 needed (1 not enough memory)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, req := setUp(t, tc.setup, tc.count, tc.memoryMiB)
			if got := c.index.Why(ShapeKey(req), req); got != tc.want {
				t.Errorf("Why = %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestIndexMatchesWalk takes thousands of random steps (pods placed and
// released, nodes added, heartbeats lost and back) and after each
// compares, for a few shapes, the index's answer with a walk over every
// node. The same steps without the free signal must disagree, or the
// check could not fail.
func TestIndexMatchesWalk(t *testing.T) {
	const steps = 3000
	if step, ok := disagreement(t, 1, steps, true); ok {
		t.Fatalf("the index and the walk disagree at step %d", step)
	}
	if _, ok := disagreement(t, 1, steps, false); !ok {
		t.Fatal("without the free signal the index still agrees with the walk: the check cannot fail")
	}
}

// disagreement takes random steps, telling the index of each free when
// signal is set, and returns the first step at which it disagrees with a
// walk over every node.
func disagreement(t *testing.T, seed uint64, steps int, signal bool) (int, bool) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	c := newCluster()
	var shapes []*placement.Request
	for _, count := range []int32{1, 2, 4} {
		for _, m := range []int64{10240, 40000, 76800} {
			shapes = append(shapes, request(t, count, m))
		}
	}
	nodes := []string{}
	placed := map[types.UID]string{}
	var uids []types.UID
	for step := range steps {
		switch r := rng.IntN(10); {
		case r == 0 || len(nodes) == 0:
			name := fmt.Sprintf("n%d", len(nodes))
			c.addNode(name, 81920, 81920, 81920, 81920)
			nodes = append(nodes, name)
			if signal {
				c.index.Freed(name)
			}
		case r < 6:
			node := nodes[rng.IntN(len(nodes))]
			if uid, ok := c.place(node, shapes[rng.IntN(len(shapes))]); ok {
				placed[uid] = node
				uids = append(uids, uid)
			}
		case len(uids) > 0:
			i := rng.IntN(len(uids))
			uid := uids[i]
			uids[i] = uids[len(uids)-1]
			uids = uids[:len(uids)-1]
			c.view.Release(uid)
			if signal {
				c.index.Freed(placed[uid])
			}
		}
		for range 3 {
			req := shapes[rng.IntN(len(shapes))]
			if fits, _ := c.index.Fits(ShapeKey(req), req); fits != c.walk(req) {
				return step, true
			}
		}
	}
	return 0, false
}

// BenchmarkFitsFull asks whether a full 5,000-node cluster of 8 GPUs each
// could hold a pod: the question the fit gate asks of every pod it holds.
func BenchmarkFitsFull(b *testing.B) {
	c := fiveThousandNodes(b, func(int) bool { return false })
	req := request(b, 1, 40000)
	key := ShapeKey(req)
	if fits, _ := c.index.Fits(key, req); fits {
		b.Fatal("a full cluster fits")
	}
	b.ReportAllocs()
	for b.Loop() {
		c.index.Fits(key, req)
	}
}

// BenchmarkEachFitHalf walks the nodes that could hold a pod on a
// 5,000-node cluster of 8 GPUs each, half of them with a GPU free: what
// the plugin's PreFilter pays to hand kube-scheduler those 2,500 nodes
// under a backlog (divide by 2,500 for the cost of one node).
func BenchmarkEachFitHalf(b *testing.B) {
	c := fiveThousandNodes(b, func(i int) bool { return i%2 == 0 })
	req := request(b, 1, 40000)
	key := ShapeKey(req)
	count := 0
	c.index.EachFit(key, req, func(string) bool { count++; return true })
	if count != 2500 {
		b.Fatalf("%d nodes could hold the pod, want 2500", count)
	}
	b.ReportAllocs()
	for b.Loop() {
		c.index.EachFit(key, req, func(string) bool { return true })
	}
}

// fiveThousandNodes is a cluster of 5,000 nodes of eight 80 GiB GPUs,
// each GPU taken whole but the first of the nodes free1 says.
func fiveThousandNodes(b *testing.B, free1 func(node int) bool) *cluster {
	c := newCluster()
	whole := request(b, 1, 81920)
	for i := range 5000 {
		name := fmt.Sprintf("node-%04d", i)
		c.addNode(name, 81920, 81920, 81920, 81920, 81920, 81920, 81920, 81920)
		for k := range 8 {
			if k == 0 && free1(i) {
				continue
			}
			if _, ok := c.place(name, whole); !ok {
				b.Fatal("filling the node failed")
			}
		}
	}
	return c
}

// BenchmarkWhy finds the reason a pod waits on the same cluster, past
// WhyMaxAge each time: the walk the reason costs.
func BenchmarkWhy(b *testing.B) {
	c := newCluster()
	for i := range 5000 {
		name := fmt.Sprintf("node-%04d", i)
		c.addNode(name, 81920, 81920, 81920, 81920, 81920, 81920, 81920, 81920)
		for range 8 {
			c.place(name, request(b, 1, 71680))
		}
	}
	req := request(b, 1, 40000)
	key := ShapeKey(req)
	for b.Loop() {
		c.clock.Step(2 * WhyMaxAge)
		if !strings.HasPrefix(c.index.Why(key, req), "no GPU has 40000 MiB free") {
			b.Fatal("unexpected reason")
		}
	}
}

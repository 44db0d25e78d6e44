package drabench

import (
	"context"
	"reflect"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// testContext logs the test's progress, without the allocator's own
// progress reports (V(5) and up).
func testContext(t *testing.T) context.Context {
	return klog.NewContext(context.Background(), ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2))))
}

func models(t testing.TB) []model {
	t.Helper()
	capacity, err := capacityModel()
	if err != nil {
		t.Fatal(err)
	}
	return []model{capacity, partitionsModel()}
}

// TestSchedulerPicksIncubating checks that the allocator measured is the
// one kube-scheduler v1.37.2 runs with its default feature gates.
func TestSchedulerPicksIncubating(t *testing.T) {
	ctx := testContext(t)
	c, err := newCluster(ctx, models(t)[0], 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.newAllocator(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pkg := reflect.TypeOf(a).Elem().PkgPath(); !strings.HasSuffix(pkg, "/internal/incubating") {
		t.Errorf("allocator from %s, want the incubating one", pkg)
	}
}

// TestFirstFitIsTheAllocators checks that the fixture places claims where
// the allocator does: allocating one claim after another with the
// allocator itself, each on the first node where it fits, gives the same
// devices in the same order, with the same consumed capacity, until every
// node is full.
func TestFirstFitIsTheAllocators(t *testing.T) {
	for _, m := range models(t) {
		t.Run(m.name, func(t *testing.T) {
			ctx := testContext(t)
			const nodes = 3
			c, err := newCluster(ctx, m, nodes, 0)
			if err != nil {
				t.Fatal(err)
			}
			var byAllocator []*resourceapi.ResourceClaim
			for {
				placed := false
				for n := range nodes {
					results, err := c.allocateOn(ctx, n)
					if err != nil {
						t.Fatal(err)
					}
					if results != nil {
						claim := c.pending.DeepCopy()
						claim.Status.Allocation = &results[0]
						byAllocator = append(byAllocator, claim)
						c.tracked = trackAllocated(byAllocator)
						placed = true
						break
					}
				}
				if !placed {
					break
				}
			}
			if want := nodes * c.perNode(); len(byAllocator) != want {
				t.Fatalf("the allocator placed %d claims on %d nodes, the fixture says they hold %d", len(byAllocator), nodes, want)
			}
			byFixture, err := firstFit(m, c.nodeSlices, c.want, c.request, len(byAllocator))
			if err != nil {
				t.Fatal(err)
			}
			for i := range byAllocator {
				got, want := byFixture[i].Status.Allocation.Devices.Results[0], byAllocator[i].Status.Allocation.Devices.Results[0]
				if got.Pool != want.Pool || got.Device != want.Device || got.Request != want.Request ||
					(got.ShareID == nil) != (want.ShareID == nil) || !sameQuantities(got.ConsumedCapacity, want.ConsumedCapacity) {
					t.Fatalf("claim %d: the fixture placed it on %s/%s consuming %v, the allocator on %s/%s consuming %v",
						i, got.Pool, got.Device, got.ConsumedCapacity, want.Pool, want.Device, want.ConsumedCapacity)
				}
			}
		})
	}
}

// TestClusterHoldsWhatItSays checks the fixture the benchmarks use: as
// many claims as asked, tracked as kube-scheduler tracks them, a full
// first node where the pod cannot go and a free last node where it can.
func TestClusterHoldsWhatItSays(t *testing.T) {
	tests := []struct {
		model   string
		perNode int
		shared  bool
	}{
		{model: "capacity", perNode: 24, shared: true},    // 3 of 30 cores on each of 8 GPUs
		{model: "partitions", perNode: 16, shared: false}, // 2 halves of each of 8 GPUs
	}
	for i, m := range models(t) {
		tt := tests[i]
		t.Run(m.name, func(t *testing.T) {
			ctx := testContext(t)
			if m.name != tt.model {
				t.Fatalf("model %s, want %s", m.name, tt.model)
			}
			const nodes, claims = 10, 50
			full, err := newCluster(ctx, m, nodes, claims)
			if err != nil {
				t.Fatal(err)
			}
			if got := full.perNode(); got != tt.perNode {
				t.Errorf("a node holds %d claims, want %d", got, tt.perNode)
			}
			for _, n := range []int{claims, 7, 0} {
				c := full.withClaims(n)
				shares, whole := c.tracked.shareIDs.Len(), c.tracked.ids.Len()
				if tt.shared && (shares != n || whole != 0) || !tt.shared && (shares != 0 || whole != n) {
					t.Errorf("%d claims tracked as %d shares and %d whole devices", n, shares, whole)
				}
			}
			free, fullNodes := full.freeNodes(), full.fullNodes()
			if want := nodes - (claims+tt.perNode-1)/tt.perNode; len(free) != want || len(fullNodes) != claims/tt.perNode {
				t.Fatalf("free nodes %v and full nodes %v, want %d and %d", free, fullNodes, want, claims/tt.perNode)
			}
			for _, n := range free {
				results, err := full.allocateOn(ctx, n)
				if err != nil {
					t.Fatal(err)
				}
				if len(results) != 1 || results[0].Devices.Results[0].Pool != nodeName(n) {
					t.Errorf("free node %s gave %v, want the claim allocated there", nodeName(n), results)
				}
			}
			for _, n := range fullNodes {
				if results, err := full.allocateOn(ctx, n); err != nil || results != nil {
					t.Errorf("full node %s gave %v, %v; want no room", nodeName(n), results, err)
				}
			}
		})
	}
}

// TestShareSetChangesNothingHere checks what filter=free-node-indexed
// relies on: for these claims the allocator gives every node the same
// answer without the state's set of shares as with it.
func TestShareSetChangesNothingHere(t *testing.T) {
	ctx := testContext(t)
	capacity := models(t)[0]
	// Two full nodes, one with room, one free.
	const nodes, claims = 4, 2*24 + 5
	c, err := newCluster(ctx, capacity, nodes, claims)
	if err != nil {
		t.Fatal(err)
	}
	state := c.tracked.gather()
	for n := range nodes {
		var got [2][]resourceapi.AllocationResult
		for i, s := range []structured.AllocatedState{state, withoutShareSet(state)} {
			a, err := c.newAllocatorFor(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			if got[i], err = a.Allocate(ctx, c.nodes[n], c.podClaims()); err != nil {
				t.Fatal(err)
			}
		}
		if (got[0] == nil) != (got[1] == nil) || got[0] != nil && (got[0][0].Devices.Results[0].Device != got[1][0].Devices.Results[0].Device ||
			!sameQuantities(got[0][0].Devices.Results[0].ConsumedCapacity, got[1][0].Devices.Results[0].ConsumedCapacity)) {
			t.Errorf("node %s: %v with the share set, %v without", nodeName(n), got[0], got[1])
		}
	}
}

func sameQuantities(a, b map[resourceapi.QualifiedName]resource.Quantity) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		if r, ok := b[name]; !ok || q.Cmp(r) != 0 {
			return false
		}
	}
	return true
}

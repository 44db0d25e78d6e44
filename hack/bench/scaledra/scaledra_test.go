package scaledra

import (
	"fmt"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
	"github.com/tessera-gpu/tessera/test/framework"
)

// TestScaleClaimsStayWithinCapacity checks DRA scale mode's fixture: the
// scale mode's first fit, written as kube-scheduler's allocations, gives
// one allocated claim per pod, with one result per GPU of its shape on
// distinct GPUs of its node, and consumes no device past the capacity its
// ResourceSlice publishes.
func TestScaleClaimsStayWithinCapacity(t *testing.T) {
	const nodes, gpus, split, pods = 1000, 8, 10, 8000
	shapes, placements, err := harness.ScalePlacements(nodes, gpus, split, pods)
	if err != nil {
		t.Fatal(err)
	}
	if len(shapes) != pods || len(placements) != pods {
		t.Fatalf("got %d shapes and %d placements, want %d claims", len(shapes), len(placements), pods)
	}
	var slices []resourceapi.ResourceSlice
	claims := make([]resourceapi.ResourceClaim, len(placements))
	sliced := map[string]bool{}
	for i, p := range placements {
		node := harness.NodeName(p.Node)
		if !sliced[node] {
			sliced[node] = true
			slices = append(slices, *harness.ResourceSlice(node, harness.GPUNodeStatus(node, gpus, split, metav1.Now()).Devices))
		}
		alloc := harness.ClaimAllocation(node, p.Devices)
		if got := int64(len(alloc.Devices.Results)); got != shapes[i].Count {
			t.Fatalf("claim %d (%s) has %d results, want %d", i, shapes[i].Name, got, shapes[i].Count)
		}
		seen := map[string]bool{}
		for _, r := range alloc.Devices.Results {
			key := r.Pool + "/" + r.Device
			if r.Pool != node || seen[key] {
				t.Fatalf("claim %d: result %s on node %s repeats a GPU or leaves the node", i, key, node)
			}
			seen[key] = true
		}
		claims[i].Status.Allocation = alloc
	}
	for _, over := range framework.OverCapacity(slices, claims) {
		t.Errorf("consumed past the slice's capacity: %s", over)
	}
}

// TestScaleClaimMemoryIsTheShapes checks that a claim consumes the
// memory its shape asks for, and a whole GPU's memory when it asks none.
func TestScaleClaimMemoryIsTheShapes(t *testing.T) {
	shapes, placements, err := harness.ScalePlacements(10, 8, 10, 40)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range placements {
		want := shapes[i].MemoryMiB
		if want == 0 {
			want = harness.GPUMemoryMiB
		}
		for _, r := range harness.ClaimAllocation(harness.NodeName(p.Node), p.Devices).Devices.Results {
			if got := r.ConsumedCapacity["memory"]; got.Value() != want<<20 {
				t.Errorf("claim %d (%s): %s consumes %d bytes, want %d", i, shapes[i].Name, r.Device, got.Value(), want<<20)
			}
		}
	}
}

// TestScaleDRAResultMarkdown checks both of DRA scale mode's tables and
// the node daemons' cost worked out from the windows.
func TestScaleDRAResultMarkdown(t *testing.T) {
	window := func(daemons, churn bool, requests, churned int64, apiserver time.Duration) SteadyWindow {
		return SteadyWindow{Daemons: daemons, Churn: churn, Window: 10 * time.Second, Requests: requests, Churned: churned,
			CPU: meter.CPUUsage{"kube-apiserver": apiserver}, Load: "1.00 1.00 1.00"}
	}
	r := &ScaleDRAResult{
		Nodes: 1000, GPUsPerNode: 8, Pods: 8000, NewPods: 200, LoadAtStart: "0.50 0.40 0.30", Load: "2.00 1.00 0.50",
		SyncTime: 3 * time.Second, RSSAfterSync: 300 << 20, PeakAfterSync: 310 << 20, PeakAfterBatch: 400 << 20,
		Bound: 200, Duration: 20 * time.Second, Latency: meter.Quantiles{P50: 9 * time.Second, P99: 19 * time.Second, Count: 200},
		CPU: meter.CPUUsage{"kube-scheduler": 30 * time.Second, "kube-apiserver": 10 * time.Second}, Writes: meter.APIWrites{"pods": 200, "resourceclaims": 400},
		Window: 10 * time.Second, Period: 15 * time.Second,
		Steady: []SteadyWindow{
			window(false, false, 0, 0, time.Second), window(false, true, 0, 500, 5*time.Second),
			window(true, false, 670, 0, 3*time.Second), window(true, true, 668, 499, 7*time.Second),
		},
	}
	var b strings.Builder
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"1000 nodes × 8 GPUs, 8000 pods with their claims allocated",
		"| kube-scheduler start to ready (informers synced) | 3000 ms |",
		"| new pods bound | 200/200 |",
		"| pods/s, first creation to last bind | 10.0 |",
		"| kube-scheduler CPU per new pod | 150 ms |",
		"| API writes per new pod (claim and pod creates included) | 3.00 |",
		"each window 10s: a Lease renewed every 15s",
		"| none | none | 0.0 | 0.100 |",
		"| none | 50.0 | 0.0 | 0.500 |",
		"| 1000 | none | 67.0 | 0.300 |",
		"| 1000 | 49.9 | 66.8 | 0.700 |",
		fmt.Sprintf("for the node daemons: %.3f with no churn (0.300 − 0.100), %.3f with claims churning (0.700 − 0.500)", 0.2, 0.2),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("DRA scale tables lack %q:\n%s", want, out)
		}
	}
}

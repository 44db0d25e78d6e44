package rows

import (
	"context"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
)

// TestSmoke runs every row on a tiny cluster against a real control plane
// and checks that each bound every pod and measured what its row measures.
// It asserts no timing: the numbers come from the full-size runs.
func TestSmoke(t *testing.T) {
	logger, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
	defer cancel()
	o := harness.NewOptions()
	o.Nodes, o.Pods, o.Timeout, o.Workers = 5, 20, 3*time.Minute, 8
	// The rows that write GPUAllocations open every node's daemon watches,
	// and close them when the row ends.
	o.NodeWatches = true
	r, err := harness.NewRunner(ctx, o, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	for _, row := range harness.AllRows() {
		t.Run(harness.RowName(row), func(t *testing.T) {
			res := runRow(ctx, r, row)
			if res.Err != nil {
				t.Fatalf("row %s: %v", row, res.Err)
			}
			if res.Bound != o.Pods || res.Duration <= 0 || res.Latency.Count != uint64(o.Pods) {
				t.Errorf("row %s bound %d of %d pods in %s with %d latencies", row, res.Bound, o.Pods, res.Duration, res.Latency.Count)
			}
			// Every pod's binding is counted among the writes, whoever bound it.
			if res.Writes["pods/binding"] != float64(o.Pods) {
				t.Errorf("row %s: writes %v, want a binding per pod", row, res.Writes)
			}
			// Every row reads its scheduler's own count of its attempts.
			if res.Attempts < o.Pods {
				t.Errorf("row %s: %d scheduling attempts read from the scheduler, want at least %d", row, res.Attempts, o.Pods)
			}
			switch row {
			case harness.RowKubeScheduler:
				if res.Verbs != nil || res.APIRequests != -1 {
					t.Errorf("kube-scheduler alone has extender measures: %+v", res)
				}
			case harness.RowNoop:
				// The no-op extender makes exactly one request per pod: its binding.
				if res.APIRequests != o.Pods || res.Verbs[harness.VerbBind].Count != uint64(o.Pods) {
					t.Errorf("no-op extender: %d API requests and %d binds, want %d each", res.APIRequests, res.Verbs[harness.VerbBind].Count, o.Pods)
				}
			case harness.RowTessera:
				if res.Verbs[harness.VerbFilter].Count == 0 || res.Verbs[harness.VerbBind].Count < uint64(o.Pods) {
					t.Errorf("Tessera's histograms: %+v", res.Verbs)
				}
				// At least an allocation and a binding per pod.
				if res.APIRequests < 2*o.Pods || res.PeakRSSBytes <= 0 {
					t.Errorf("Tessera made %d API requests with peak memory %d", res.APIRequests, res.PeakRSSBytes)
				}
			case harness.RowPlugin, harness.RowDRA:
				// Scheduled in kube-scheduler's own process, with the
				// allocation's or the claim's writes.
				kind := map[string]string{harness.RowPlugin: "gpuallocations", harness.RowDRA: "resourceclaims/status"}[row]
				if res.Verbs != nil || res.APIRequests != -1 || res.Writes[kind] != float64(o.Pods) {
					t.Errorf("row %s: verbs %v, %d extender requests, writes %v; want no extender and one %s per pod", row, res.Verbs, res.APIRequests, res.Writes, kind)
				}
			}
		})
	}
	// The pinned control plane: the row finds it, pins it and finishes.
	t.Run("pinned control plane", func(t *testing.T) {
		pin, err := harness.NewPinning()
		if err != nil {
			t.Skipf("pinning needs 2 CPUs: %v", err)
		}
		pinned := *r
		pinned.Pin, pinned.Base = pin, t.TempDir()
		if res := runRow(ctx, &pinned, harness.RowKubeScheduler); res.Err != nil || res.Bound != o.Pods || res.Pinning != pin {
			t.Errorf("pinned row a: bound %d of %d, pinning %v: %v", res.Bound, o.Pods, res.Pinning, res.Err)
		}
	})
	logger.Info("Smoke run done")
}

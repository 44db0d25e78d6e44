package main

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/hack/bench/backlog"
	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/hack/bench/rows"
	"github.com/tessera-gpu/tessera/hack/bench/writes"

	"k8s.io/klog/v2/ktesting"

	"github.com/tessera-gpu/tessera/test/framework"
)

// newTestRunner builds the extender and loads the scheduler configuration
// that o names, for a runner of o in the test's directories.
func newTestRunner(ctx context.Context, t *testing.T, o *harness.Options) *harness.Runner {
	t.Helper()
	config, err := harness.LoadExtenderConfig(framework.RepoRoot() + "/" + o.SchedulerConfig)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := harness.BuildExtender(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &harness.Runner{Options: o, Base: t.TempDir(), ExtenderConfig: config, ExtenderBin: bin}
}

// TestSmoke runs every row on a tiny cluster against a real control plane
// and checks that each bound every pod and measured what its row measures.
// It asserts no timing: the numbers come from the full-size runs.
func TestSmoke(t *testing.T) {
	logger, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
	defer cancel()
	o := harness.NewOptions()
	o.Nodes, o.Pods, o.Timeout, o.Workers = 5, 20, 3*time.Minute, 8
	r := newTestRunner(ctx, t, o)
	var err error
	if r.SchedulerBin, r.PluginConfig, err = pluginScheduler(o, r.ExtenderConfig.SchedulerName); err != nil {
		t.Fatal(err)
	}

	for _, row := range harness.AllRows() {
		t.Run(harness.RowName(row), func(t *testing.T) {
			res := rows.Run(ctx, r, row)
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
		if res := rows.Run(ctx, &pinned, harness.RowKubeScheduler); res.Err != nil || res.Bound != o.Pods || res.Pinning != pin {
			t.Errorf("pinned row a: bound %d of %d, pinning %v: %v", res.Bound, o.Pods, res.Pinning, res.Err)
		}
	})
	logger.Info("Smoke run done")
}

// TestWritesSmoke measures the writes mode on a tiny cluster against a real
// control plane and checks that it made, and saw, every write of every kind.
func TestWritesSmoke(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	o := harness.NewOptions()
	o.Mode, o.Nodes, o.Pods, o.Workers = harness.ModeWrites, 5, 20, 8
	res, err := writes.Run(ctx, o, t.TempDir(), "tessera-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	var writes []string
	for _, c := range res.Costs {
		writes = append(writes, c.Write)
		if c.Count != o.Pods || c.PerSecond <= 0 || c.APIServer < 0 || c.Etcd < 0 {
			t.Errorf("%s: %+v", c.Write, c)
		}
	}
	want := []string{"pod create", "GPUAllocation create", "binding", "GPUAllocation status: Allocated"}
	if !slices.Equal(writes, want) {
		t.Errorf("measured %q, want %q", writes, want)
	}
	var out strings.Builder
	if err := res.WriteMarkdown(&out); err != nil || strings.Count(out.String(), "\n|") != len(want)+2 {
		t.Errorf("the table has not a row per write (%v):\n%s", err, out.String())
	}
}

func TestRunRefusesBadFlags(t *testing.T) {
	err := run(context.Background(), []string{"--nodes=0"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--nodes=0: must be from 1 to 20000") {
		t.Fatalf("run = %v, want an error naming --nodes and its limit", err)
	}
}

// TestBacklogSmoke runs backlog mode's rows c and e on a tiny cluster
// against a real control plane and checks that pods ended, waiting pods
// took their room, and each measure was taken. It asserts no timing.
func TestBacklogSmoke(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
	defer cancel()
	o := harness.NewOptions()
	o.Mode, o.Nodes, o.Workers, o.Rows = harness.ModeBacklog, 3, 8, []string{harness.RowTessera, harness.RowDRA}
	o.FinishRate, o.BacklogDuration, o.BacklogWarmup = 10, 3*time.Second, time.Minute
	r := newTestRunner(ctx, t, o)
	table := backlog.BacklogTable{Title: "backlog", Rows: backlog.Run(ctx, r)}
	if len(table.Rows) != 2 {
		t.Fatalf("%d rows, want 2", len(table.Rows))
	}
	for _, res := range table.Rows {
		if res.Err != nil {
			t.Fatalf("row %s: %v", res.Row, res.Err)
		}
		if res.Filled == 0 || res.Backlog != backlog.BacklogFactor*res.Filled || res.Frees == 0 || res.Placed == 0 ||
			res.Attempts <= 0 || res.FreedToBound.Count == 0 || res.Writes["pods"] < float64(res.Frees) {
			t.Errorf("row %s measured %+v", res.Row, res)
		}
	}
	var out strings.Builder
	if err := table.WriteMarkdown(&out); err != nil || strings.Count(out.String(), "\n|") != 4 {
		t.Errorf("the table has not a row per mode (%v):\n%s", err, out.String())
	}
}

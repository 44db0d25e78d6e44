package backlog

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
)

// TestBacklogSmoke runs backlog mode's rows c, f and e on a tiny cluster
// against a real control plane and checks that pods ended, waiting pods
// took their room, and each measure was taken, the scheduler's restart
// under the backlog included. It asserts no timing.
func TestBacklogSmoke(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
	defer cancel()
	o := harness.NewOptions()
	o.Mode, o.Nodes, o.Workers, o.Rows = harness.ModeBacklog, 3, 8, []string{harness.RowTessera, harness.RowFitGate, harness.RowDRA}
	o.FinishRate, o.BacklogDuration, o.BacklogWarmup = 10, 3*time.Second, time.Minute
	o.BacklogRestart = true
	r, err := harness.NewRunner(ctx, o, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	table := Run(ctx, r)
	if len(table.Rows) != 3 {
		t.Fatalf("%d rows, want 3", len(table.Rows))
	}
	for _, res := range table.Rows {
		if res.Err != nil {
			t.Fatalf("row %s: %v", res.Row, res.Err)
		}
		if res.Filled == 0 || res.Backlog != BacklogFactor*res.Filled || res.Frees == 0 || res.Placed == 0 ||
			res.Attempts <= 0 || res.FreedToBound.Count == 0 || res.Writes["pods"] < float64(res.Frees) {
			t.Errorf("row %s measured %+v", res.Row, res)
		}
		if res.Restart == nil || res.Restart.Ready <= 0 || !res.Restart.Settled {
			t.Errorf("row %s: restart measured %+v", res.Row, res.Restart)
		}
	}
	var out strings.Builder
	if err := table.WriteMarkdown(&out); err != nil || strings.Count(out.String(), "\n|") != 5 {
		t.Errorf("the table has not a row per mode (%v):\n%s", err, out.String())
	}
}

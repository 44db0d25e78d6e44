package gangs

import (
	"context"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
)

// TestSmoke runs gangs mode on a tiny cluster against a real control plane
// and checks that each row bound every pod, placed every gang whole, and
// measured the scheduler's CPU. It asserts no timing: the numbers come
// from the full-size runs.
func TestSmoke(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
	defer cancel()
	o := harness.NewOptions()
	o.Mode, o.Rows = harness.ModeGangs, []string{harness.RowPlugin}
	o.Nodes, o.Pods, o.Timeout, o.Workers = 5, 16, 3*time.Minute, 8
	o.Gangs.Sizes = []int{4, 8}
	r, err := harness.NewRunner(ctx, o, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	table := Run(ctx, r)
	if err := table.Failed(); err != nil {
		t.Fatal(err)
	}
	if len(table.Rows) != 3 {
		t.Fatalf("%d rows, want gangs of 4, of 8 and none", len(table.Rows))
	}
	for _, res := range table.Rows {
		wantGangs := 0
		if res.Size > 0 {
			wantGangs = o.Pods / res.Size
		}
		if res.Bound != o.Pods || res.Gangs != wantGangs || res.Placed != wantGangs || res.Partial != 0 {
			t.Errorf("gangs of %d: bound %d of %d pods, placed %d of %d gangs whole, %d in part", res.Size, res.Bound, o.Pods, res.Placed, res.Gangs, res.Partial)
		}
		if res.SchedulerCPU <= 0 || res.Duration <= 0 {
			t.Errorf("gangs of %d: scheduler CPU %s over %s, want some", res.Size, res.SchedulerCPU, res.Duration)
		}
	}
}

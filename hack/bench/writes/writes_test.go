package writes

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
)

// TestWritesSmoke measures the writes mode on a tiny cluster against a real
// control plane and checks that it made, and saw, every write of every kind.
func TestWritesSmoke(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	o := harness.NewOptions()
	o.Mode, o.Nodes, o.Pods, o.Workers = harness.ModeWrites, 5, 20, 8
	res, err := Run(ctx, &harness.Runner{Options: o, Base: t.TempDir(), ExtenderConfig: harness.SchedulerConfig{SchedulerName: "tessera-scheduler"}})
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

package backlog

import (
	"strings"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

func TestVerdict(t *testing.T) {
	tests := []struct {
		name       string
		d          time.Duration
		count      uint64
		lowerBound bool
		want       string
	}{
		{name: "under the target", d: 900 * time.Millisecond, count: 10, want: "met"},
		{name: "at the target", d: time.Second, count: 10, want: "met"},
		{name: "over the target", d: 1100 * time.Millisecond, count: 10, want: "not met"},
		{name: "a lower bound over the target", d: 2 * time.Second, count: 10, lowerBound: true, want: "not met"},
		{name: "a lower bound under the target says nothing", d: 500 * time.Millisecond, count: 10, lowerBound: true, want: "not known (a lower bound)"},
		{name: "nothing measured", count: 0, want: "not measured"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := verdict(tt.d, tt.count, tt.lowerBound, time.Second); got != tt.want {
				t.Errorf("verdict = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestBacklogTableTargets checks that the targets are listed for extender
// and plugin mode only, each with its verdict.
func TestBacklogTableTargets(t *testing.T) {
	row := func(name string) BacklogRow {
		r := BacklogRow{Row: name, Name: harness.RowName(name), Filled: 10, Backlog: 30, Settled: true, Attempts: 20, Ending: time.Second, Window: 11 * time.Second}
		r.Frees, r.Placed, r.Taken = 10, 10, 10
		r.FreedToBound = censored{Quantiles: meter.Quantiles{P50: 100 * time.Millisecond, P99: 800 * time.Millisecond, Count: 10}}
		r.FreeAnswer = meter.Quantiles{P50: 40 * time.Millisecond, P99: 300 * time.Millisecond, Count: 10}
		r.FitWait = fitWaits{Longest: 6 * time.Second, LongestNode: "n1", Waits: 3}
		return r
	}
	checked := row(harness.RowDRA)
	checked.ConsistencyChecks = meter.Counts{"pods": 1}
	var out strings.Builder
	if err := (BacklogTable{Rows: []BacklogRow{row(harness.RowTessera), checked}}).WriteText(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"row c: freed → bound p99 800 ms, target ≤ 1000 ms: met",
		"row c: scheduling attempts per placed pod 2.0, target ≤ 3: met",
		"row c: longest wait while a GPU could hold the pod 6000 ms, target ≤ 5000 ms: not met",
		"row c: the requests that freed GPUs took p50 40.0 ms, p99 300 ms to answer (a free counts from the request)",
		"row e: kube-apiserver checked its watch cache against etcd, listing every object, in the window: pods 1",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the table lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "row c: kube-apiserver checked") {
		t.Errorf("a row without checks in its window notes them:\n%s", text)
	}
	if strings.Contains(text, "row e: freed → bound p99") {
		t.Errorf("DRA mode has targets:\n%s", text)
	}
}

package gangs

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
)

func TestMembers(t *testing.T) {
	tests := []struct {
		name        string
		pods, size  int
		wantGangs   int
		wantSecond0 string
	}{
		{name: "gangs of 4", pods: 8, size: 4, wantGangs: 2, wantSecond0: harness.PodName(4)},
		{name: "gangs of 2", pods: 6, size: 2, wantGangs: 3, wantSecond0: harness.PodName(2)},
		{name: "no PodGroup makes no gangs", pods: 8, size: 0, wantGangs: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := members(tt.pods, tt.size)
			if len(got) != tt.wantGangs {
				t.Fatalf("%d gangs, want %d", len(got), tt.wantGangs)
			}
			for _, g := range got {
				if len(g) != tt.size {
					t.Errorf("gang %v has %d pods, want %d", g, len(g), tt.size)
				}
			}
			if tt.wantGangs > 1 && got[1][0] != tt.wantSecond0 {
				t.Errorf("the second gang starts with %s, want %s", got[1][0], tt.wantSecond0)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	start := time.Unix(1000, 0)
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	gangs := [][]string{{"a0", "a1"}, {"b0", "b1"}, {"c0", "c1"}}
	tests := []struct {
		name                                  string
		binds                                 map[string]time.Time
		gangs                                 [][]string
		wantBound, wantPlaced, wantPartial    int
		wantDuration, wantGangsDuration       time.Duration
		wantPodsPerSecond, wantGangsPerSecond float64
	}{
		{name: "every gang placed, the last gang's last pod last",
			binds: map[string]time.Time{"a0": at(1), "a1": at(2), "b0": at(2), "b1": at(3), "c0": at(3), "c1": at(4)}, gangs: gangs,
			wantBound: 6, wantPlaced: 3, wantDuration: 4 * time.Second, wantGangsDuration: 4 * time.Second,
			wantPodsPerSecond: 1.5, wantGangsPerSecond: 0.75},
		{name: "a gang half placed counts apart and ends no gang",
			binds: map[string]time.Time{"a0": at(1), "a1": at(2), "b0": at(5)}, gangs: gangs,
			wantBound: 3, wantPlaced: 1, wantPartial: 1, wantDuration: 5 * time.Second, wantGangsDuration: 2 * time.Second,
			wantPodsPerSecond: 0.6, wantGangsPerSecond: 0.5},
		{name: "nothing bound measures nothing", binds: map[string]time.Time{}, gangs: gangs},
		{name: "pods without a PodGroup count no gangs",
			binds:     map[string]time.Time{"a0": at(1), "a1": at(2)},
			wantBound: 2, wantDuration: 2 * time.Second, wantPodsPerSecond: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Result
			r.summarize(tt.binds, tt.gangs, start)
			if r.Bound != tt.wantBound || r.Placed != tt.wantPlaced || r.Partial != tt.wantPartial {
				t.Errorf("bound %d, placed %d, partial %d; want %d, %d, %d", r.Bound, r.Placed, r.Partial, tt.wantBound, tt.wantPlaced, tt.wantPartial)
			}
			if r.Duration != tt.wantDuration || r.GangsDuration != tt.wantGangsDuration {
				t.Errorf("durations %s and %s, want %s and %s", r.Duration, r.GangsDuration, tt.wantDuration, tt.wantGangsDuration)
			}
			if r.PodsPerSecond() != tt.wantPodsPerSecond || r.GangsPerSecond() != tt.wantGangsPerSecond {
				t.Errorf("%g pods/s, %g gangs/s; want %g, %g", r.PodsPerSecond(), r.GangsPerSecond(), tt.wantPodsPerSecond, tt.wantGangsPerSecond)
			}
		})
	}
}

func TestCPUPer(t *testing.T) {
	tests := []struct {
		name                    string
		r                       Result
		wantPerPod, wantPerGang time.Duration
	}{
		{name: "gangs of 8", r: Result{Size: 8, Bound: 64, Placed: 8, SchedulerCPU: 640 * time.Millisecond},
			wantPerPod: 10 * time.Millisecond, wantPerGang: 80 * time.Millisecond},
		{name: "nothing placed costs nothing per pod", r: Result{Size: 8, SchedulerCPU: time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.CPUPerPod(); got != tt.wantPerPod {
				t.Errorf("CPU per pod %s, want %s", got, tt.wantPerPod)
			}
			if got := tt.r.CPUPerGang(); got != tt.wantPerGang {
				t.Errorf("CPU per gang %s, want %s", got, tt.wantPerGang)
			}
		})
	}
}

func TestTableCells(t *testing.T) {
	table := Table{Rows: []Result{
		{Size: 8, Pods: 16, Bound: 16, Gangs: 2, Placed: 2, Duration: 2 * time.Second, GangsDuration: 2 * time.Second, SchedulerCPU: 160 * time.Millisecond},
		{Size: 0, Pods: 16, Bound: 16, Duration: time.Second, SchedulerCPU: 80 * time.Millisecond},
		{Size: 32, Pods: 64, Bound: 32, Gangs: 2, Placed: 1, Err: errors.New("timed out")},
	}}
	want := [][]string{
		{"16", "gangs of 8 (minCount 8)", "16/16", "2/2", "0", "8.0", "1.0", "80.0 ms", "10.0 ms", "2.0 s"},
		{"16", "none", "16/16", "—", "—", "16.0", "—", "—", "5.0 ms", "1.0 s"},
		{"64", "gangs of 32 (minCount 32)", "32/64", "1/2", "0", "failed", "—", "—", "—", "—"},
	}
	got := table.cells()
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("row %d:\n got %q\nwant %q", i, got[i], want[i])
		}
	}
	if err := table.Failed(); err == nil || !strings.Contains(err.Error(), "gangs of 32") {
		t.Errorf("Failed() = %v, want the row of gangs of 32", err)
	}
}

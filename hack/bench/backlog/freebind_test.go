package backlog

import (
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// freeAt frees GPUs on a node, at ms after the test's start.
type freeAt struct {
	node string
	at   int
	gpus map[string]room
}

// bindAt binds a pod holding holds to a node, at ms after the test's start.
type bindAt struct {
	node  string
	at    int
	holds []placement.Hold
	// want is the latency in ms, or -1 for a bind that draws from no free.
	want int
}

// pod holds memory and cores of each of the GPUs.
func pod(memory int64, cores int32, gpus ...string) []placement.Hold {
	var holds []placement.Hold
	for _, g := range gpus {
		holds = append(holds, placement.Hold{UUID: g, MemoryMiB: memory, Cores: cores, Shares: 1})
	}
	return holds
}

func TestFreeBindMatcher(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	whole := map[string]room{"g0": {memoryMiB: 81920, cores: 100}}
	eighth := map[string]room{"g0": {memoryMiB: 10240}}
	tests := []struct {
		name      string
		frees     []freeAt
		binds     []bindAt
		wantTaken int
	}{
		{name: "a bind takes the free on its node",
			frees: []freeAt{{"n1", 0, eighth}}, binds: []bindAt{{"n1", 300, pod(8192, 0, "g0"), 300}}, wantTaken: 1},
		{name: "a bind on another node takes nothing",
			frees: []freeAt{{"n1", 0, eighth}}, binds: []bindAt{{"n2", 300, pod(8192, 0, "g0"), -1}}},
		{name: "a bind before the free is not its taker",
			frees: []freeAt{{"n1", 500, eighth}}, binds: []bindAt{{"n1", 300, pod(8192, 0, "g0"), -1}}},
		{name: "the earliest free is drawn from first",
			frees: []freeAt{{"n1", 0, eighth}, {"n1", 100, eighth}},
			binds: []bindAt{{"n1", 300, pod(8192, 0, "g0"), 300}, {"n1", 400, pod(8192, 0, "g0"), 300}}, wantTaken: 2},
		{name: "a pod larger than the freed slice takes it and the later free, timed from the later",
			frees: []freeAt{{"n1", 0, eighth}, {"n1", 100, whole}},
			binds: []bindAt{{"n1", 300, pod(20480, 30, "g0"), 200}}, wantTaken: 2},
		{name: "a pod of two freed slices takes both and leaves the third",
			frees: []freeAt{{"n1", 0, eighth}, {"n1", 100, eighth}, {"n1", 200, eighth}},
			binds: []bindAt{{"n1", 300, pod(20480, 0, "g0"), 200}}, wantTaken: 2},
		{name: "what the frees lack came from room free before",
			frees: []freeAt{{"n1", 0, eighth}}, binds: []bindAt{{"n1", 300, pod(20480, 30, "g0"), 300}}, wantTaken: 1},
		{name: "a pod on a GPU the free did not give back is not its taker",
			frees: []freeAt{{"n1", 0, eighth}}, binds: []bindAt{{"n1", 300, pod(8192, 0, "g1"), -1}}},
		{name: "a freed whole GPU serves several slices, each timed from the free",
			frees:     []freeAt{{"n1", 0, whole}},
			binds:     []bindAt{{"n1", 300, pod(40960, 50, "g0"), 300}, {"n1", 400, pod(40960, 50, "g0"), 400}, {"n1", 500, pod(8192, 0, "g0"), -1}},
			wantTaken: 1},
		{name: "a multi-GPU pod takes the frees of each of its GPUs",
			frees: []freeAt{{"n1", 0, whole}, {"n1", 100, map[string]room{"g1": {memoryMiB: 81920, cores: 100}}}},
			binds: []bindAt{{"n1", 300, pod(81920, 0, "g0", "g1"), 200}}, wantTaken: 2},
		{name: "a multi-GPU pod draws only from the frees of its own GPUs",
			frees: []freeAt{{"n1", 0, whole}, {"n1", 100, map[string]room{"g1": {memoryMiB: 81920, cores: 100}}}},
			binds: []bindAt{{"n1", 300, pod(81920, 0, "g1", "g2"), 200}}, wantTaken: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newFreeBindMatcher()
			for _, f := range tt.frees {
				gpus := map[string]room{}
				for k, v := range f.gpus {
					gpus[k] = v
				}
				m.freed(f.node, at(f.at), gpus)
			}
			unmatched := 0
			for i, b := range tt.binds {
				d, ok := m.bound(b.node, at(b.at), b.holds)
				switch {
				case b.want < 0 && ok:
					t.Errorf("bind %d matched a free %s before, want none", i, d)
				case b.want >= 0 && (!ok || d != time.Duration(b.want)*time.Millisecond):
					t.Errorf("bind %d: %s, %v; want %d ms", i, d, ok, b.want)
				}
				if b.want < 0 {
					unmatched++
				}
			}
			if m.taken != tt.wantTaken || m.unmatched != unmatched {
				t.Errorf("taken %d, unmatched %d; want %d and %d", m.taken, m.unmatched, tt.wantTaken, unmatched)
			}
			if untaken := m.untaken(at(1000)); len(untaken) != len(tt.frees)-tt.wantTaken {
				t.Errorf("%d frees untaken, want %d", len(untaken), len(tt.frees)-tt.wantTaken)
			}
		})
	}
}

func TestCensoredQuantiles(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name           string
		taken, untaken []time.Duration
		wantP50        time.Duration
		wantP99        time.Duration
		p50AtLeast     bool
		p99AtLeast     bool
	}{
		{name: "every free taken: exact", taken: ms(1, 2, 3, 4), wantP50: 2 * time.Millisecond, wantP99: 4 * time.Millisecond},
		{name: "untaken frees older than every quantile leave them exact only below",
			taken: ms(1, 2, 3), untaken: ms(50), wantP50: 2 * time.Millisecond, wantP99: 50 * time.Millisecond, p99AtLeast: true},
		{name: "a young untaken free makes both lower bounds",
			taken: ms(10, 20, 30), untaken: ms(1), wantP50: 10 * time.Millisecond, wantP99: 30 * time.Millisecond, p50AtLeast: true, p99AtLeast: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := censoredQuantiles(tt.taken, tt.untaken)
			if c.P50 != tt.wantP50 || c.P99 != tt.wantP99 || c.P50AtLeast != tt.p50AtLeast || c.P99AtLeast != tt.p99AtLeast {
				t.Errorf("censoredQuantiles = %+v, want p50 %s (at least %v), p99 %s (at least %v)", c, tt.wantP50, tt.p50AtLeast, tt.wantP99, tt.p99AtLeast)
			}
		})
	}
}

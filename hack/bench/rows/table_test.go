package rows

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

func sampleTable() Table {
	verbs := map[string]meter.Quantiles{
		harness.VerbFilter:     {P50: 500 * time.Microsecond, P99: 2 * time.Millisecond, Count: 10},
		harness.VerbPrioritize: {P50: 300 * time.Microsecond, P99: 900 * time.Microsecond, Count: 10},
		harness.VerbBind:       {P50: 12 * time.Millisecond, P99: 150 * time.Millisecond, Count: 10},
	}
	return Table{
		Title: "2 nodes",
		Rows: []RowResult{
			{Row: "a", Name: "kube-scheduler alone", Pods: 100, Bound: 100, Duration: 500 * time.Millisecond,
				Latency: meter.Quantiles{P50: 200 * time.Millisecond, P99: 480 * time.Millisecond, Count: 100}, APIRequests: -1},
			{Row: "b", Name: "kube-scheduler + no-op extender", Pods: 100, Bound: 100, Duration: time.Second,
				Latency: meter.Quantiles{P50: 400 * time.Millisecond, P99: 990 * time.Millisecond, Count: 100}, Verbs: verbs, APIRequests: 100},
			{Row: "c", Name: "kube-scheduler + Tessera", Pods: 100, Bound: 100, Duration: 2 * time.Second,
				Latency: meter.Quantiles{P50: time.Second, P99: 12 * time.Second, Count: 100}, Verbs: verbs,
				PeakRSSBytes: 60 << 20, APIRequests: 401,
				Writes: meter.APIWrites{"gpuallocations": 100, "gpuallocations/status": 100, "pods/binding": 100, "leases": 1}},
			{Row: "d", Name: "tessera-scheduler (plugin mode)", Pods: 100, Bound: 100, Duration: time.Second,
				Latency: meter.Quantiles{P50: 400 * time.Millisecond, P99: 900 * time.Millisecond, Count: 100}, APIRequests: -1,
				Writes: meter.APIWrites{"gpuallocations": 100, "gpuallocations/status": 100, "pods/binding": 100}},
		},
		Notes: []string{"load average: 0.5"},
	}
}

func TestTableCells(t *testing.T) {
	tests := []struct {
		name  string
		table Table
		want  [][]string
	}{
		{
			name:  "every row with its ratio to kube-scheduler alone and its writes per pod",
			table: sampleTable(),
			want: [][]string{
				{"a", "kube-scheduler alone", "100/100", "200.0", "1.00", "200 ms", "480 ms", "—", "—", "—", "—", "—", "—"},
				{"b", "kube-scheduler + no-op extender", "100/100", "100.0", "0.50", "400 ms", "990 ms", "0.50 ms / 2.0 ms", "0.30 ms / 0.90 ms", "12.0 ms / 150 ms", "—", "100", "—"},
				{"c", "kube-scheduler + Tessera", "100/100", "50.0", "0.25", "1000 ms", "12.0 s", "0.50 ms / 2.0 ms", "0.30 ms / 0.90 ms", "12.0 ms / 150 ms", "60 MiB", "401", "3.01"},
				{"d", "tessera-scheduler (plugin mode)", "100/100", "100.0", "0.50", "400 ms", "900 ms", "—", "—", "—", "—", "—", "3.00"},
			},
		},
		{
			name:  "no ratio without kube-scheduler alone",
			table: Table{Rows: []RowResult{{Row: "c", Name: "kube-scheduler + Tessera", Pods: 1, Bound: 1, Duration: time.Second, APIRequests: 2}}},
			want:  [][]string{{"c", "kube-scheduler + Tessera", "1/1", "1.0", "—", "—", "—", "—", "—", "—", "—", "2", "—"}},
		},
		{
			name: "a failed row shows what was bound and no rate",
			table: Table{Rows: []RowResult{
				{Row: "a", Name: "kube-scheduler alone", Pods: 10, Bound: 10, Duration: time.Second, APIRequests: -1},
				{Row: "c", Name: "kube-scheduler + Tessera", Pods: 10, Bound: 3, Duration: time.Second, APIRequests: 12, Err: errors.New("timeout")},
			}},
			want: [][]string{
				{"a", "kube-scheduler alone", "10/10", "10.0", "1.00", "—", "—", "—", "—", "—", "—", "—", "—"},
				{"c", "kube-scheduler + Tessera", "3/10", "failed", "—", "—", "—", "—", "—", "—", "—", "12", "—"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.table.cells()
			if len(got) != len(tt.want) {
				t.Fatalf("got %d rows, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if strings.Join(got[i], "|") != strings.Join(tt.want[i], "|") {
					t.Errorf("row %d:\n got %q\nwant %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestTableWriteText(t *testing.T) {
	var b strings.Builder
	table := Table{
		Title: "title",
		Rows: []RowResult{
			{Row: "a", Name: "kube-scheduler alone", Pods: 1, Bound: 1, Duration: time.Second, APIRequests: -1},
			{Row: "c", Name: "kube-scheduler + Tessera", Pods: 1, Bound: 0, APIRequests: 3, Err: errors.New("extender exited")},
		},
		Notes: []string{"load average: 0.5"},
	}
	if err := table.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if lines[0] != "title" {
		t.Errorf("first line %q, want the title", lines[0])
	}
	// Columns line up: "scheduler" starts where each row's name does.
	col := strings.Index(lines[1], "scheduler")
	for _, l := range lines[2:4] {
		if r := []rune(l); len(r) <= col || (string(r[col:col+14]) != "kube-scheduler") {
			t.Errorf("line %q: name not at column %d", l, col)
		}
	}
	for _, l := range lines {
		if strings.HasSuffix(l, " ") {
			t.Errorf("line %q ends in a space", l)
		}
	}
	out := b.String()
	for _, want := range []string{"load average: 0.5", "row c failed: extender exited"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestTableWriteMarkdown(t *testing.T) {
	var b strings.Builder
	if err := sampleTable().WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	want := []string{
		"2 nodes",
		"",
		"| row | scheduler | bound | pods/s | ÷ row a | latency p50 | latency p99 | filter p50/p99 | prioritize p50/p99 | bind p50/p99 | extender peak RSS | extender API requests | API writes per pod |",
		"|---|---|---|---|---|---|---|---|---|---|---|---|---|",
		"| a | kube-scheduler alone | 100/100 | 200.0 | 1.00 | 200 ms | 480 ms | — | — | — | — | — | — |",
	}
	for i, w := range want {
		if lines[i] != w {
			t.Errorf("line %d:\n got %q\nwant %q", i, lines[i], w)
		}
	}
	for _, note := range []string{
		"\nload average: 0.5\n",
		"\nrow c: API writes per pod while scheduling, by every client: gpuallocations 1.00, gpuallocations/status 1.00, pods/binding 1.00, leases 0.01\n",
	} {
		if !strings.Contains(b.String(), note) {
			t.Errorf("note %q missing:\n%s", note, b.String())
		}
	}
}

func TestTableTargets(t *testing.T) {
	tests := []struct {
		name string
		rows []RowResult
		want []string
	}{
		{
			name: "each target whose rows finished, met or not",
			rows: sampleTable().Rows,
			want: []string{
				"plugin mode ÷ kube-scheduler alone (d ÷ a): 0.50, target ≥ 0.75 with the control plane pinned: not met",
				"plugin mode ÷ extender mode (d ÷ c): 2.00, target ≥ 1.50 with the control plane pinned: met",
				"extender mode ÷ the no-op extender (c ÷ b): 0.50, target ≥ 0.90 with the control plane pinned: not met",
			},
		},
		{
			name: "DRA is compared with no target; a failed row is left out",
			rows: []RowResult{
				{Row: "c", Pods: 10, Bound: 10, Duration: time.Second},
				{Row: "d", Pods: 10, Bound: 3, Duration: time.Second, Err: errors.New("timeout")},
				{Row: "e", Pods: 10, Bound: 10, Duration: 2 * time.Second},
			},
			want: []string{"DRA mode ÷ extender mode (e ÷ c): 0.50"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Table{Rows: tt.rows}.targets()
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("targets:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		name  string
		d     time.Duration
		count uint64
		want  string
	}{
		{name: "nothing observed", d: time.Second, count: 0, want: "—"},
		{name: "sub-millisecond keeps two decimals", d: 123 * time.Microsecond, count: 1, want: "0.12 ms"},
		{name: "milliseconds keep one decimal", d: 4560 * time.Microsecond, count: 1, want: "4.6 ms"},
		{name: "hundreds of milliseconds are whole", d: 345600 * time.Microsecond, count: 1, want: "346 ms"},
		{name: "ten seconds and more in seconds", d: 12340 * time.Millisecond, count: 1, want: "12.3 s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := harness.FormatDuration(tt.d, tt.count); got != tt.want {
				t.Errorf("formatDuration(%s) = %q, want %q", tt.d, got, tt.want)
			}
		})
	}
}

package rows

import (
	"fmt"
	"io"
	"time"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

// RowResult is what one row of the throughput table measured.
type RowResult struct {
	// Row is a, b or c; Name says what ran.
	Row, Name string
	// Pods were created; Bound of them were bound before the row ended.
	Pods, Bound int
	// Duration is from the scheduler's start to the last bind.
	Duration time.Duration
	// Latency is from each pod's creation, or the scheduler's start if
	// later, to its bind.
	Latency meter.Quantiles
	// Verbs are the extender's latencies by verb; nil without an extender.
	Verbs map[string]meter.Quantiles
	// BindQueueWait is how long Tessera's binds waited for the allocation
	// ahead of them on their node; zero for other rows.
	BindQueueWait meter.Quantiles
	// CPU is the CPU time each process used from the scheduler's start to
	// the end of the row.
	CPU meter.CPUUsage
	// Cycle is where the time between two binds to one node goes; nil
	// for other rows.
	Cycle *BindCycle
	// PeakRSSBytes is the extender process's peak resident memory; 0 when
	// it was not measured (no extender, or one inside the bench).
	PeakRSSBytes int64
	// APIRequests is how many requests the extender made to the API
	// server; -1 without an extender.
	APIRequests int
	// Attempts are the scheduler's scheduling attempts; Batched the pods
	// it placed on the node its opportunistic batching carried over from
	// the pod before; AlgorithmMean how long filtering and scoring took
	// in an attempt, on average; Flushed why batching dropped the nodes
	// it carried over, by reason.
	Attempts, Batched int
	AlgorithmMean     time.Duration
	Flushed           meter.Counts
	// Writes are the write requests kube-apiserver served while the row
	// scheduled, from every client, by resource.
	Writes meter.APIWrites
	// Pinning is where the control plane and the rest ran; nil when they
	// shared every CPU.
	Pinning *harness.Pinning
	// Err is why the row did not finish, if it did not.
	Err error
}

// Throughput is pods bound per second of the row's duration.
func (r RowResult) Throughput() float64 {
	if r.Duration <= 0 {
		return 0
	}
	return float64(r.Bound) / r.Duration.Seconds()
}

// Table is the throughput table: every row, its ratio to kube-scheduler
// alone, and the targets between rows.
type Table struct {
	// Title says what the workload was and where it ran.
	Title string
	Rows  []RowResult
	// Notes are lines printed under the table, such as the load average.
	Notes []string
}

func tableHeader() []string {
	return []string{
		"row", "scheduler", "bound", "pods/s", "÷ row a",
		"latency p50", "latency p99",
		"filter p50/p99", "prioritize p50/p99", "bind p50/p99",
		"extender peak RSS", "extender API requests", "API writes per pod",
	}
}

// result returns the row's result if it ran and finished.
func (t Table) result(row string) (RowResult, bool) {
	for _, r := range t.Rows {
		if r.Row == row && r.Err == nil && r.Throughput() > 0 {
			return r, true
		}
	}
	return RowResult{}, false
}

// cells renders the rows as text cells, one slice per row.
func (t Table) cells() [][]string {
	alone, haveAlone := t.result(harness.RowKubeScheduler)
	out := make([][]string, 0, len(t.Rows))
	for _, r := range t.Rows {
		ratio := "—"
		if haveAlone && r.Err == nil {
			ratio = fmt.Sprintf("%.2f", r.Throughput()/alone.Throughput())
		}
		row := []string{r.Row, r.Name, fmt.Sprintf("%d/%d", r.Bound, r.Pods)}
		if r.Err != nil {
			row = append(row, "failed", ratio)
		} else {
			row = append(row, fmt.Sprintf("%.1f", r.Throughput()), ratio)
		}
		row = append(row, harness.FormatDuration(r.Latency.P50, r.Latency.Count), harness.FormatDuration(r.Latency.P99, r.Latency.Count))
		for _, verb := range harness.ExtenderVerbs() {
			q, ok := r.Verbs[verb]
			if !ok {
				row = append(row, "—")
				continue
			}
			row = append(row, harness.FormatDuration(q.P50, q.Count)+" / "+harness.FormatDuration(q.P99, q.Count))
		}
		writes := "—"
		if r.Writes != nil && r.Bound > 0 {
			writes = fmt.Sprintf("%.2f", r.Writes.Total()/float64(r.Bound))
		}
		row = append(row, harness.FormatBytes(r.PeakRSSBytes), harness.FormatCount(r.APIRequests), writes)
		out = append(out, row)
	}
	return out
}

// WriteText writes the table with aligned columns, then why any row failed.
func (t Table) WriteText(w io.Writer) error {
	return harness.WriteGrid(w, t.Title, tableHeader(), t.cells(), t.notes(), false)
}

// WriteMarkdown writes the table as a Markdown table, then why any row failed.
func (t Table) WriteMarkdown(w io.Writer) error {
	return harness.WriteGrid(w, t.Title, tableHeader(), t.cells(), t.notes(), true)
}

func (t Table) notes() []string {
	notes := append([]string(nil), t.Notes...)
	notes = append(notes, t.targets()...)
	for _, r := range t.Rows {
		if len(r.CPU) > 0 && r.Bound > 0 {
			notes = append(notes, fmt.Sprintf("row %s: CPU time while scheduling, %.1f ms per pod: %s",
				r.Row, float64(r.CPU.Total())/float64(time.Millisecond)/float64(r.Bound), r.CPU))
		}
		if r.Pinning != nil && len(r.CPU) > 0 && r.Duration > 0 {
			cp, rest := r.Pinning.Split(r.CPU)
			seconds := r.Duration.Seconds()
			notes = append(notes, fmt.Sprintf("row %s: CPU busy while scheduling: control plane %.0f%% of CPU %s, the rest %.0f%% of CPU %s",
				r.Row, 100*cp/seconds/float64(len(r.Pinning.ControlPlaneCPUs)), harness.CPUList(r.Pinning.ControlPlaneCPUs),
				100*rest/seconds/float64(len(r.Pinning.RestCPUs)), harness.CPUList(r.Pinning.RestCPUs)))
		}
		if len(r.Writes) > 0 && r.Bound > 0 {
			notes = append(notes, fmt.Sprintf("row %s: API writes per pod while scheduling, by every client: %s", r.Row, r.Writes.PerPod(r.Bound)))
		}
		if r.Attempts > 0 {
			note := fmt.Sprintf("row %s: %d scheduling attempts, %d pods placed where opportunistic batching pointed; filtering and scoring %s an attempt (mean)",
				r.Row, r.Attempts, r.Batched, r.AlgorithmMean.Round(10*time.Microsecond))
			if len(r.Flushed) > 0 {
				note += "; batching dropped the nodes it carried over: " + r.Flushed.String()
			}
			notes = append(notes, note)
		}
		if r.BindQueueWait.Count > 0 {
			notes = append(notes, fmt.Sprintf("row %s: binds waited for their node's previous allocation p50 %s, p99 %s (in bind p50/p99)",
				r.Row, harness.FormatDuration(r.BindQueueWait.P50, r.BindQueueWait.Count), harness.FormatDuration(r.BindQueueWait.P99, r.BindQueueWait.Count)))
		}
		if r.Cycle != nil {
			notes = append(notes, fmt.Sprintf("row %s: one node's bind cycle: %s", r.Row, r.Cycle))
		}
		if r.Err != nil {
			notes = append(notes, fmt.Sprintf("row %s failed: %v", r.Row, r.Err))
		}
	}
	return notes
}

// target is a throughput ratio between two rows that Tessera aims for,
// with the control plane on a CPU of its own.
type target struct {
	what     string
	row, per string
	min      float64
}

// targets are the ratios the table reports, with their targets.
func targets() []target {
	return []target{
		{what: "plugin mode ÷ kube-scheduler alone", row: harness.RowPlugin, per: harness.RowKubeScheduler, min: 0.75},
		{what: "plugin mode ÷ extender mode", row: harness.RowPlugin, per: harness.RowTessera, min: 1.5},
		{what: "extender mode ÷ the no-op extender", row: harness.RowTessera, per: harness.RowNoop, min: 0.9},
		{what: "DRA mode ÷ extender mode", row: harness.RowDRA, per: harness.RowTessera},
		{what: "DRA mode ÷ plugin mode", row: harness.RowDRA, per: harness.RowPlugin},
	}
}

// targets measures each target whose two rows finished; a ratio with no
// target is given for comparison.
func (t Table) targets() []string {
	var out []string
	for _, tg := range targets() {
		num, ok1 := t.result(tg.row)
		den, ok2 := t.result(tg.per)
		if !ok1 || !ok2 {
			continue
		}
		ratio := num.Throughput() / den.Throughput()
		line := fmt.Sprintf("%s (%s ÷ %s): %.2f", tg.what, tg.row, tg.per, ratio)
		if tg.min > 0 {
			met := "met"
			if ratio < tg.min {
				met = "not met"
			}
			line += fmt.Sprintf(", target ≥ %.2f with the control plane pinned: %s", tg.min, met)
		}
		out = append(out, line)
	}
	return out
}

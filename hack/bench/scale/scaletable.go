package scale

import (
	"fmt"
	"io"
	"time"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

// Targets for the extender at scale: its filter latency and its memory
// with many pods placed.
const (
	targetFilterP99 = "< 5 ms"
	targetMemory    = "< 400 MiB"
)

// rows are the scale mode's measures, one per row: what, value, target.
func (r *ScaleResult) rows() [][]string {
	q := func(x meter.Quantiles) string {
		return harness.FormatDuration(x.P50, x.Count) + " / " + harness.FormatDuration(x.P99, x.Count)
	}
	rows := [][]string{
		{"extender start to ready (informers synced)", harness.FormatDuration(r.SyncTime, 1), ""},
		{"resident memory 2 s after ready", harness.FormatBytes(r.RSSAfterSync), ""},
		{"peak resident memory (VmHWM) after sync", harness.FormatBytes(r.PeakAfterSync), targetMemory},
		{fmt.Sprintf("peak resident memory after %d filter + %d prioritize probes", r.Filter.Count, r.Prioritize.Count), harness.FormatBytes(r.PeakAfterProbes), targetMemory},
		{fmt.Sprintf("peak resident memory after one /metrics scrape (%.1f MiB of text)", float64(r.MetricsBytes)/(1<<20)), harness.FormatBytes(r.PeakAfterScrape), ""},
		{"Go heap in use at the scrape", harness.FormatBytes(r.HeapInuse), ""},
		{"extender CPU time for the scrape", harness.FormatDuration(r.ScrapeCPU, 1), ""},
		{fmt.Sprintf("filter p50 / p99, %d nodes, round trip", r.Nodes), q(r.Filter), targetFilterP99},
		{fmt.Sprintf("filter p50 / p99, %d nodes, extender histogram", r.Nodes), q(r.FilterServer), targetFilterP99},
		{"extender CPU time per filter call", harness.FormatDuration(r.FilterCPU, r.Filter.Count), ""},
		{fmt.Sprintf("prioritize p50 / p99, %d feasible nodes, round trip", r.Feasible), q(r.Prioritize), ""},
		{"extender CPU time per prioritize call", harness.FormatDuration(r.PrioritizeCPU, r.Prioritize.Count), ""},
		{"API requests by the extender (sync, probes)", harness.FormatCount(r.APIRequests.Total), ""},
	}
	if h := r.Heartbeats; h != nil {
		cpu := func(d time.Duration) string { return fmt.Sprintf("%.3f CPU", h.PerSecond(d.Seconds())) }
		rows = append(rows,
			[]string{fmt.Sprintf("heartbeat requests per second, %d nodes every %s", r.Nodes, h.Period), fmt.Sprintf("%.1f", h.PerSecond(float64(h.Writes))), ""},
			[]string{"kube-apiserver CPU per second of steady state", cpu(h.APIServer), ""},
			[]string{"etcd CPU per second of steady state", cpu(h.Etcd), ""},
			[]string{"extender CPU per second of steady state", cpu(h.Extender), ""},
		)
	}
	return rows
}

func (r *ScaleResult) title() string {
	settled := "once the control plane was idle"
	if !r.Quiet {
		settled = "with the control plane still busy"
	}
	return fmt.Sprintf("Extender at scale: %d nodes × %d GPUs, %d pods placed (load average %s before the bench's writes, %s when the extender started; probes began %s after its memory was read, %s)",
		r.Nodes, r.GPUsPerNode, r.Pods, r.LoadAtStart, r.Load, r.QuietAfter.Round(time.Second), settled)
}

// WriteText writes the scale table with aligned columns.
func (r *ScaleResult) WriteText(w io.Writer) error {
	return harness.WriteGrid(w, r.title(), []string{"measure", "value", "target"}, r.rows(), r.notes(), false)
}

// WriteMarkdown writes the scale table in Markdown.
func (r *ScaleResult) WriteMarkdown(w io.Writer) error {
	return harness.WriteGrid(w, r.title(), []string{"measure", "value", "target"}, r.rows(), r.notes(), true)
}

func (r *ScaleResult) notes() []string {
	var notes []string
	if r.APIRequests.Total != 0 {
		notes = append(notes, "extender API requests by kind: "+r.APIRequests.String())
	}
	if h := r.Heartbeats; h != nil {
		notes = append(notes, fmt.Sprintf("steady state measured for %s, one period and a half after the heartbeats began; load average %s", h.Window, h.Load))
	}
	return notes
}

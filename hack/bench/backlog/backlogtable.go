package backlog

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

// Targets for extender and plugin mode under a backlog: how soon a freed
// GPU is bound again, how often a pod is tried, and how long a pod waits
// while a GPU could hold it.
const (
	targetFreedToBoundP99 = time.Second
	targetAttempts        = 3.0
	targetFitWait         = 5 * time.Second
)

// BacklogTable is backlog mode's report: one row per mode, and the
// targets under it.
type BacklogTable struct {
	Title string
	Rows  []BacklogRow
}

func backlogHeader() []string {
	return []string{
		"row", "scheduler", "running / waiting", "warm-up", "pods ended", "placed",
		"freed → bound p50", "freed → bound p99", "frees taken",
		"attempts per placed pod", "scheduler CPU per placed pod", "API writes per placed pod",
		"longest wait while a GPU fits",
	}
}

// schedulerCPU is the CPU time of the scheduler's side: every process but
// the control plane's and the bench's (kube-scheduler or
// tessera-scheduler, and the extender).
func schedulerCPU(u meter.CPUUsage) time.Duration {
	var total time.Duration
	for name, t := range u {
		if name != "bench" && !slices.Contains(harness.ControlPlaneProcesses(), name) {
			total += t
		}
	}
	return total
}

// perPlaced is a measure per placed pod, or "—" when none was placed.
func (r BacklogRow) perPlaced(v float64, format string) string {
	if r.Placed == 0 {
		return "—"
	}
	return fmt.Sprintf(format, v/float64(r.Placed))
}

// atLeast writes a duration, with "≥ " when it is a lower bound.
func atLeast(d time.Duration, count uint64, bound bool) string {
	s := harness.FormatDuration(d, count)
	if bound && count > 0 {
		s = "≥ " + s
	}
	return s
}

func (t BacklogTable) cells() [][]string {
	out := make([][]string, 0, len(t.Rows))
	for _, r := range t.Rows {
		warmup := harness.FormatDuration(r.Warmup, 1)
		if !r.Settled {
			warmup = "> " + warmup
		}
		q := r.FreedToBound
		out = append(out, []string{
			r.Row, r.Name, fmt.Sprintf("%d / %d", r.Filled, r.Backlog), warmup,
			fmt.Sprintf("%d", r.Frees), fmt.Sprintf("%d", r.Placed),
			atLeast(q.P50, q.Count, q.P50AtLeast), atLeast(q.P99, q.Count, q.P99AtLeast),
			fmt.Sprintf("%d/%d", r.Taken, r.Frees),
			r.perPlaced(r.Attempts, "%.1f"),
			r.perPlaced(float64(schedulerCPU(r.CPU))/float64(time.Millisecond), "%.1f ms"),
			r.perPlaced(r.Writes.Total(), "%.2f"),
			atLeast(r.FitWait.Longest, uint64(r.FitWait.Waits), r.FitWait.OpenAtEnd),
		})
	}
	return out
}

// WriteText writes the table with aligned columns, then its notes.
func (t BacklogTable) WriteText(w io.Writer) error {
	return harness.WriteGrid(w, t.Title, backlogHeader(), t.cells(), t.notes(), false)
}

// WriteMarkdown writes the table in Markdown, then its notes.
func (t BacklogTable) WriteMarkdown(w io.Writer) error {
	return harness.WriteGrid(w, t.Title, backlogHeader(), t.cells(), t.notes(), true)
}

func (t BacklogTable) notes() []string {
	var notes []string
	for _, r := range t.Rows {
		if r.Err != nil && r.Window == 0 {
			notes = append(notes, fmt.Sprintf("row %s failed: %v", r.Row, r.Err))
			continue
		}
		notes = append(notes, r.targets()...)
		settled := "tried every waiting pod"
		if !r.Settled {
			settled = "had not tried every waiting pod (--backlog-warmup)"
		}
		notes = append(notes, fmt.Sprintf("row %s: the scheduler %s after %s and bound %d waiting pods meanwhile; then %d pods ended in %s (%.1f a second), %s measured, %d pods still waiting at the end",
			r.Row, settled, r.Warmup.Round(time.Second), r.WarmupBinds, r.Frees, r.Ending.Round(time.Second),
			float64(r.Frees)/max(r.Ending.Seconds(), 1), r.Window.Round(time.Second), r.Waiting))
		if rs := r.Restart; rs != nil {
			tried := "tried every waiting pod"
			if !rs.Settled {
				tried = "had not tried every waiting pod (--backlog-warmup)"
			}
			notes = append(notes, fmt.Sprintf("row %s: restarted with %d waiting pods gated in kube-scheduler's queue and %d not parked (after %s): ready after %s, %s after %s",
				r.Row, rs.Gated, rs.Unparked, rs.Settle.Round(time.Second), rs.Ready.Round(100*time.Millisecond), tried, rs.Warmup.Round(time.Second)))
		}
		if a := r.FreeAnswer; a.Count > 0 {
			notes = append(notes, fmt.Sprintf("row %s: the requests that freed GPUs took p50 %s, p99 %s to answer (a free counts from the request)",
				r.Row, harness.FormatDuration(a.P50, a.Count), harness.FormatDuration(a.P99, a.Count)))
		}
		notes = append(notes, fmt.Sprintf("row %s: %d binds drew on no free (room free before the window); %d waits while a GPU fitted, %d over %s, the longest on %s%s",
			r.Row, r.Unmatched, r.FitWait.Waits, r.FitWait.Over, targetFitWait, orDash(r.FitWait.LongestNode), map[bool]string{true: ", still open at the end", false: ""}[r.FitWait.OpenAtEnd]))
		if len(r.CPU) > 0 {
			notes = append(notes, fmt.Sprintf("row %s: CPU time in the window: %s", r.Row, r.CPU))
		}
		if len(r.Writes) > 0 && r.Placed > 0 {
			notes = append(notes, fmt.Sprintf("row %s: API writes per placed pod in the window, by every client (the bench's ends included): %s", r.Row, r.Writes.PerPod(r.Placed)))
		}
		if len(r.ConsistencyChecks) > 0 {
			notes = append(notes, fmt.Sprintf("row %s: kube-apiserver checked its watch cache against etcd, listing every object, in the window: %s", r.Row, r.ConsistencyChecks))
		}
		if r.Err != nil {
			notes = append(notes, fmt.Sprintf("row %s failed: %v", r.Row, r.Err))
		}
	}
	return notes
}

// targets measures the backlog targets for extender and plugin mode.
func (r BacklogRow) targets() []string {
	if r.Row != harness.RowTessera && r.Row != harness.RowFitGate && r.Row != harness.RowPlugin {
		return nil
	}
	q := r.FreedToBound
	attempts := "no pod placed"
	attemptsMet := "not met"
	if r.Placed > 0 {
		a := r.Attempts / float64(r.Placed)
		attempts = fmt.Sprintf("%.1f", a)
		if a <= targetAttempts {
			attemptsMet = "met"
		}
	}
	return []string{
		fmt.Sprintf("row %s: freed → bound p99 %s, target ≤ %s: %s", r.Row, atLeast(q.P99, q.Count, q.P99AtLeast),
			harness.FormatDuration(targetFreedToBoundP99, 1), verdict(q.P99, q.Count, q.P99AtLeast, targetFreedToBoundP99)),
		fmt.Sprintf("row %s: scheduling attempts per placed pod %s, target ≤ %.0f: %s", r.Row, attempts, targetAttempts, attemptsMet),
		fmt.Sprintf("row %s: longest wait while a GPU could hold the pod %s, target ≤ %s: %s", r.Row,
			atLeast(r.FitWait.Longest, uint64(r.FitWait.Waits), r.FitWait.OpenAtEnd), harness.FormatDuration(targetFitWait, 1),
			verdict(r.FitWait.Longest, 1, r.FitWait.OpenAtEnd, targetFitWait)),
	}
}

// verdict says whether a measure meets an upper bound; a lower bound
// under the target says nothing.
func verdict(d time.Duration, count uint64, lowerBound bool, target time.Duration) string {
	switch {
	case count == 0:
		return "not measured"
	case d > target:
		return "not met"
	case lowerBound:
		return "not known (a lower bound)"
	default:
		return "met"
	}
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// Failed reports the first row that did not finish.
func (t BacklogTable) Failed() error {
	for _, r := range t.Rows {
		if r.Err != nil {
			return fmt.Errorf("row %s did not finish", r.Row)
		}
	}
	return nil
}

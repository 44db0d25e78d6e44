package queue

import (
	"fmt"
	"io"
	"time"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

// QueueTable is queue mode's report: the run without the gang-fit check
// and the run with it, side by side.
type QueueTable struct {
	Title string
	// Setup says how the cluster was fragmented and what the quota was.
	Setup []string
	Runs  []QueueRun
}

func queueHeader() []string {
	return []string{
		"run", "Jobs done", "created → admitted p50 / p99", "last free → admitted p50 / p99",
		"of which: Kueue's quota", "the check turning Ready", "Kueue admitting once Ready", "Jobs waiting for GPUs only: free → admitted",
		"created → all pods running p50 / p99",
		"admitted Jobs that waited with pods Pending", "their wait p50 / p99",
		"GPU memory at work (mean)", "held idle (mean)", "peak held", "deadlock", "all done in",
	}
}

func (t QueueTable) cells() [][]string {
	out := make([][]string, 0, len(t.Runs))
	for _, r := range t.Runs {
		waited := fmt.Sprintf("%d of %d", r.Waited, r.Admitted)
		wait := pair(r.WaitedFor)
		if r.Open > 0 {
			wait = fmt.Sprintf("≥ %s (%d never all ran)", wait, r.Open)
		}
		done := "—"
		if r.Done > 0 {
			done = r.LastDone.Round(time.Second).String()
		}
		if r.Done < r.Jobs {
			done = fmt.Sprintf("not all; %d by %s", r.Done, done)
		}
		out = append(out, []string{
			runName(r.GangFit), r.doneCell(), pair(r.ToAdmitted), pair(r.FreeToAdmitted),
			pair(r.FreeStages.Quota), r.checkCell(), pair(r.FreeStages.Admit), counted(r.FreeStages.GPUsOnly),
			pair(r.ToRunning),
			waited, wait,
			fmt.Sprintf("%.0f%%", r.Memory.MeanWork), fmt.Sprintf("%.0f%%", r.Memory.MeanIdle), fmt.Sprintf("%.0f%%", r.Memory.PeakUsed),
			r.deadlockCell(), done,
		})
	}
	return out
}

// pair writes a median and 99th percentile in seconds.
func pair(q meter.Quantiles) string {
	if q.Count == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f / %.1f s", q.P50.Seconds(), q.P99.Seconds())
}

// counted writes a median and 99th percentile with the count they are of.
func counted(q meter.Quantiles) string {
	if q.Count == 0 {
		return "—"
	}
	return fmt.Sprintf("%d Jobs: %s", q.Count, pair(q))
}

// checkCell is the check's stage, which a run without it does not have.
func (r QueueRun) checkCell() string {
	if !r.GangFit {
		return "—"
	}
	return pair(r.FreeStages.Check)
}

func (r QueueRun) deadlockCell() string {
	d := r.Stall
	switch {
	case d.deadlock():
		return fmt.Sprintf("yes: %d Jobs, %d pods Pending, %.0f GiB held, nothing moved for %s",
			d.jobs, d.pending, float64(d.heldMiB)/1024, d.at.Sub(d.since).Round(time.Second))
	case r.Err != nil:
		return "not known (failed)"
	default:
		return "none"
	}
}

// doneCell says how many Jobs were done, and why the run ended before all
// were when no deadlock says it.
func (r QueueRun) doneCell() string {
	s := fmt.Sprintf("%d / %d", r.Done, r.Jobs)
	if d := r.Stall; d != nil && !d.deadlock() {
		s += fmt.Sprintf("; then nothing moved for %s, %d Jobs not admitted", d.at.Sub(d.since).Round(time.Second), d.unadmitted)
	}
	return s
}

// WriteText writes the table with aligned columns, then its notes.
func (t QueueTable) WriteText(w io.Writer) error {
	return harness.WriteGrid(w, t.Title, queueHeader(), t.cells(), t.notes(), false)
}

// WriteMarkdown writes the table in Markdown, then its notes.
func (t QueueTable) WriteMarkdown(w io.Writer) error {
	return harness.WriteGrid(w, t.Title, queueHeader(), t.cells(), t.notes(), true)
}

func (t QueueTable) notes() []string {
	notes := append([]string(nil), t.Setup...)
	for _, r := range t.Runs {
		name := runName(r.GangFit)
		notes = append(notes, fmt.Sprintf("%s: load average (1, 5, 15 min) before: %s; %d admitted, %d with all pods running", name, r.Load, r.Admitted, r.Running))
		if len(r.Memory.Series) > 0 {
			notes = append(notes, fmt.Sprintf("%s: GPU memory held by the Jobs, share of the free memory (idle: in Jobs with pods Pending): %s", name, r.Memory))
		}
		if r.Err != nil {
			notes = append(notes, fmt.Sprintf("%s failed: %v", name, r.Err))
		}
	}
	return notes
}

// Failed reports the first run that did not finish.
func (t QueueTable) Failed() error {
	for _, r := range t.Runs {
		if r.Err != nil {
			return fmt.Errorf("the run %s did not finish", runName(r.GangFit))
		}
	}
	return nil
}

package gangs

import (
	"fmt"
	"io"
	"time"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
)

// Result is what one row of gangs mode measured.
type Result struct {
	// Size is the gangs' size; 0 for the pods without a PodGroup.
	Size int
	// Pods were created; Bound of them were bound before the row ended.
	Pods, Bound int
	// Gangs is how many gangs the row had; Placed of them had every pod
	// bound, Partial some but not all when the row ended.
	Gangs, Placed, Partial int
	// Duration is from the scheduler's start to the last bind,
	// GangsDuration to the last gang with every pod bound.
	Duration, GangsDuration time.Duration
	// SchedulerCPU is tessera-scheduler's CPU time from its start to the
	// end of the row, ReadyCPU of it until it was ready.
	SchedulerCPU, ReadyCPU time.Duration
	// Load is the load average before the row.
	Load string
	// Err is why the row did not finish, if it did not.
	Err error
}

// summarize counts the pods bound, when, and the gangs placed whole or in
// part, from each pod's bind time and each gang's pods.
func (r *Result) summarize(binds map[string]time.Time, gangs [][]string, start time.Time) {
	r.Bound, r.Gangs = len(binds), len(gangs)
	var last, lastGang time.Time
	for _, at := range binds {
		last = laterOf(last, at)
	}
	for _, pods := range gangs {
		bound, placed := 0, time.Time{}
		for _, name := range pods {
			if at, ok := binds[name]; ok {
				bound++
				placed = laterOf(placed, at)
			}
		}
		switch {
		case bound == len(pods):
			r.Placed++
			lastGang = laterOf(lastGang, placed)
		case bound > 0:
			r.Partial++
		}
	}
	if r.Bound > 0 {
		r.Duration = last.Sub(start)
	}
	if r.Placed > 0 {
		r.GangsDuration = lastGang.Sub(start)
	}
}

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// PodsPerSecond is pods bound per second of the row's duration.
func (r Result) PodsPerSecond() float64 { return perSecond(r.Bound, r.Duration) }

// GangsPerSecond is gangs placed whole per second, up to the last one.
func (r Result) GangsPerSecond() float64 { return perSecond(r.Placed, r.GangsDuration) }

// CPUPerPod is the scheduler's CPU time per pod bound; CPUPerGang per gang
// placed whole. Zero when none was.
func (r Result) CPUPerPod() time.Duration  { return per(r.SchedulerCPU, r.Bound) }
func (r Result) CPUPerGang() time.Duration { return per(r.SchedulerCPU, r.Placed) }

func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func per(d time.Duration, n int) time.Duration {
	if n == 0 {
		return 0
	}
	return d / time.Duration(n)
}

// Table is gangs mode's table: a row per gang size, then the pods
// without a PodGroup.
type Table struct {
	// Title says what the workload was and where it ran.
	Title string
	Rows  []Result
}

func header() []string {
	return []string{"pods", "PodGroup", "bound", "gangs placed whole", "gangs half placed",
		"pods/s", "gangs/s", "scheduler CPU per gang", "scheduler CPU per pod", "time to place all"}
}

// cells renders the rows as text cells; a gang's columns are "—" in the
// row without a PodGroup.
func (t Table) cells() [][]string {
	out := make([][]string, 0, len(t.Rows))
	for _, r := range t.Rows {
		group, placed, partial, gangsPerSecond, cpuPerGang := "none", "—", "—", "—", "—"
		if r.Size > 0 {
			group = fmt.Sprintf("gangs of %d (minCount %d)", r.Size, r.Size)
			placed, partial = fmt.Sprintf("%d/%d", r.Placed, r.Gangs), fmt.Sprint(r.Partial)
			gangsPerSecond = fmt.Sprintf("%.1f", r.GangsPerSecond())
			cpuPerGang = harness.FormatDuration(r.CPUPerGang(), uint64(r.Placed))
		}
		row := []string{fmt.Sprint(r.Pods), group, fmt.Sprintf("%d/%d", r.Bound, r.Pods), placed, partial}
		if r.Err != nil {
			row = append(row, "failed", "—", "—", "—", "—")
		} else {
			row = append(row, fmt.Sprintf("%.1f", r.PodsPerSecond()), gangsPerSecond, cpuPerGang,
				harness.FormatDuration(r.CPUPerPod(), uint64(r.Bound)), fmt.Sprintf("%.1f s", r.Duration.Seconds()))
		}
		out = append(out, row)
	}
	return out
}

// notes are the lines under the table: the scheduler's CPU until it was
// ready, the load before each row, and why a row failed.
func (t Table) notes() []string {
	var notes []string
	for _, r := range t.Rows {
		name := "no PodGroup"
		if r.Size > 0 {
			name = fmt.Sprintf("gangs of %d", r.Size)
		}
		notes = append(notes, fmt.Sprintf("%s: load average (1, 5, 15 min) before the row %s; scheduler CPU %s in all, %s of it until ready",
			name, r.Load, r.SchedulerCPU, r.ReadyCPU))
		if r.Err != nil {
			notes = append(notes, fmt.Sprintf("%s failed: %v", name, r.Err))
		}
	}
	return notes
}

// WriteText writes the table with aligned columns.
func (t Table) WriteText(w io.Writer) error {
	return harness.WriteGrid(w, t.Title, header(), t.cells(), t.notes(), false)
}

// WriteMarkdown writes the table in Markdown.
func (t Table) WriteMarkdown(w io.Writer) error {
	return harness.WriteGrid(w, t.Title, header(), t.cells(), t.notes(), true)
}

// Failed says which row did not finish, if one did not.
func (t Table) Failed() error {
	for _, r := range t.Rows {
		if r.Err != nil {
			return fmt.Errorf("the row of gangs of %d did not finish", r.Size)
		}
	}
	return nil
}

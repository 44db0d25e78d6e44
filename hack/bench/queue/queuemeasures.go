package queue

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

// queueSeriesPoints is how many points the memory series of the report has.
const queueSeriesPoints = 10

// queueMeasures are what a queue run measured, from its tracker.
type queueMeasures struct {
	// Jobs were submitted; Admitted, Running and Done of them were, by the end.
	Jobs, Admitted, Running, Done int
	// ToAdmitted is from a Job's creation to its admission, ToRunning to
	// all its pods running, over the Jobs that got there.
	ToAdmitted, ToRunning meter.Quantiles
	// FreeToAdmitted is, over the Jobs admitted after room freed while
	// they waited, from the last free before each admission to it, and
	// FreeStages where that time went.
	FreeToAdmitted meter.Quantiles
	FreeStages     freeStages
	// Waited are the admitted Jobs a pod of which the scheduler found no
	// room for; WaitedFor is from their admission until all their pods
	// ran, or the end for the Open ones, which never did.
	Waited, Open int
	WaitedFor    meter.Quantiles
	// LastDone is from the run's start to the last Job done.
	LastDone time.Duration
	// Memory is the GPU memory the Jobs' pods held over time.
	Memory memoryMeasures
	// Stall is the stall declared, if any: a deadlock when admitted Jobs
	// held pods Pending.
	Stall *queueStall
}

// memoryMeasures summarise the memory samples, up to the last progress
// when the run stalled, as shares of the memory the fragments leave free: on average and at the peak, at work and in all
// (at work and held idle), and a short series.
type memoryMeasures struct {
	MeanWork, MeanIdle, PeakUsed float64
	Series                       []string
}

// measures summarises the run from start to end; gangFit says whether
// its Workloads passed the gang-fit check.
func (t *queueTracker) measures(start, end time.Time, freeMiB int64, gangFit bool) queueMeasures {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := queueMeasures{Jobs: len(t.jobs), Stall: t.stalled}
	var toAdmitted, toRunning, waitedFor, freeToAdmitted []time.Duration
	var splits []freeSplit
	var lastDone time.Time
	for _, j := range t.jobs {
		if !j.admitted.IsZero() {
			m.Admitted++
			toAdmitted = append(toAdmitted, j.admitted.Sub(j.created))
			if free, ok := t.lastFree(j); ok {
				freeToAdmitted = append(freeToAdmitted, j.admitted.Sub(free))
				splits = append(splits, splitFree(j, free, gangFit))
			}
		}
		if !j.running.IsZero() {
			m.Running++
			toRunning = append(toRunning, j.running.Sub(j.created))
		}
		if !j.done.IsZero() {
			m.Done++
			lastDone = later(lastDone, j.done)
		}
		if j.unschedulable.IsZero() {
			continue
		}
		m.Waited++
		if j.running.IsZero() {
			m.Open++
			waitedFor = append(waitedFor, end.Sub(j.admitted))
		} else {
			waitedFor = append(waitedFor, j.running.Sub(j.admitted))
		}
	}
	m.ToAdmitted, m.ToRunning, m.WaitedFor = meter.SampleQuantiles(toAdmitted), meter.SampleQuantiles(toRunning), meter.SampleQuantiles(waitedFor)
	m.FreeToAdmitted, m.FreeStages = meter.SampleQuantiles(freeToAdmitted), stages(splits)
	if m.Done > 0 {
		m.LastDone = lastDone.Sub(start)
	}
	samples := t.samples
	if t.stalled != nil {
		// The quiet that declared the stall is not the queue at work.
		samples = slices.DeleteFunc(slices.Clone(samples), func(s memorySample) bool { return s.at.After(t.stalled.since) })
	}
	m.Memory = summariseMemory(samples, start, freeMiB)
	return m
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// summariseMemory averages the samples, taken at a steady period, and
// picks queueSeriesPoints of them evenly, each as "time: used% (idle%)".
func summariseMemory(samples []memorySample, start time.Time, freeMiB int64) memoryMeasures {
	var m memoryMeasures
	if len(samples) == 0 || freeMiB <= 0 {
		return m
	}
	share := func(mib int64) float64 { return 100 * float64(mib) / float64(freeMiB) }
	for _, s := range samples {
		m.MeanWork += share(s.workMiB)
		m.MeanIdle += share(s.idle)
		m.PeakUsed = max(m.PeakUsed, share(s.workMiB+s.idle))
	}
	m.MeanWork /= float64(len(samples))
	m.MeanIdle /= float64(len(samples))
	points := min(queueSeriesPoints, len(samples))
	for k := range points {
		s := samples[k*(len(samples)-1)/max(points-1, 1)]
		m.Series = append(m.Series, fmt.Sprintf("%s: %.0f%% (%.0f%% idle)",
			s.at.Sub(start).Round(time.Second), share(s.workMiB+s.idle), share(s.idle)))
	}
	return m
}

// String is the series on one line.
func (m memoryMeasures) String() string { return strings.Join(m.Series, ", ") }

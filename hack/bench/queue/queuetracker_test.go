package queue

import (
	"testing"
	"time"
)

// stallCase is a case of TestQueueTrackerStall.
type stallCase struct {
	name string
	// events run on a tracker of Jobs of 2 pods, stall 30 s, from t0.
	events         func(tr *queueTracker)
	sampleAt       int
	wantDone       bool
	wantStall      bool
	wantDeadlock   bool
	wantJobs       int
	wantPending    int
	wantUnadmitted int
	wantHeldMiB    int64
}

// stallCases are the cases of TestQueueTrackerStall.
func stallCases(at func(int) time.Time) []stallCase {
	return []stallCase{
		{
			name: "an admitted Job with a pod Pending and nothing moving for the stall is a deadlock",
			events: func(tr *queueTracker) {
				tr.created("a", at(0))
				tr.admitted("a", at(1))
				tr.placed("a-1", "a", 8192, at(2))
				tr.allocated("a-1", at(3))
			},
			sampleAt: 32, wantStall: true, wantDeadlock: true, wantJobs: 1, wantPending: 1, wantHeldMiB: 8192,
		},
		{
			name: "the same Job before the stall has passed is not",
			events: func(tr *queueTracker) {
				tr.created("a", at(0))
				tr.admitted("a", at(1))
				tr.placed("a-1", "a", 8192, at(2))
			},
			sampleAt: 31,
		},
		{
			name: "Jobs never admitted hold nothing: a long quiet is a stall but no deadlock",
			events: func(tr *queueTracker) {
				tr.created("a", at(0))
			},
			sampleAt: 100, wantStall: true, wantUnadmitted: 1,
		},
		{
			name: "a Job with all its pods placed holds none Pending: a long quiet is a stall, no deadlock",
			events: func(tr *queueTracker) {
				tr.created("a", at(0))
				tr.admitted("a", at(1))
				tr.placed("a-1", "a", 8192, at(2))
				tr.placed("a-2", "a", 8192, at(2))
			},
			sampleAt: 100, wantStall: true, wantHeldMiB: 16384,
		},
		{
			name: "every Job done ends the run",
			events: func(tr *queueTracker) {
				tr.created("a", at(0))
				tr.admitted("a", at(1))
				tr.placed("a-1", "a", 8192, at(2))
				tr.placed("a-2", "a", 8192, at(2))
				tr.allocated("a-1", at(3))
				tr.allocated("a-2", at(3))
				tr.finished("a", at(10))
			},
			sampleAt: 11, wantDone: true,
		},
	}
}

func TestQueueTrackerStall(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for _, tt := range stallCases(at) {
		t.Run(tt.name, func(t *testing.T) {
			tr := newQueueTracker(2, 30*time.Second, t0)
			tt.events(tr)
			done, d := tr.sample(at(tt.sampleAt))
			if done != tt.wantDone {
				t.Errorf("done = %v, want %v", done, tt.wantDone)
			}
			if (d != nil) != tt.wantStall || d.deadlock() != tt.wantDeadlock {
				t.Fatalf("stall = %+v (deadlock %v), want a stall %v, a deadlock %v", d, d.deadlock(), tt.wantStall, tt.wantDeadlock)
			}
			if d != nil && (d.jobs != tt.wantJobs || d.pending != tt.wantPending || d.unadmitted != tt.wantUnadmitted || d.heldMiB != tt.wantHeldMiB) {
				t.Errorf("stall = %d Jobs, %d pods Pending, %d not admitted, %d MiB held; want %d, %d, %d, %d",
					d.jobs, d.pending, d.unadmitted, d.heldMiB, tt.wantJobs, tt.wantPending, tt.wantUnadmitted, tt.wantHeldMiB)
			}
		})
	}
}

func TestQueueTrackerMeasures(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	tr := newQueueTracker(2, time.Minute, t0)
	// Job a is admitted and runs at once; b is admitted, a pod of it finds
	// no room, and it runs only once a is done.
	for _, job := range []string{"a", "b"} {
		tr.created(job, at(0))
		tr.admitted(job, at(1))
	}
	tr.placed("a-1", "a", 10240, at(2))
	tr.placed("a-2", "a", 10240, at(2))
	tr.placed("b-1", "b", 20480, at(2))
	tr.unschedulable("b", at(2))
	if tr.allocated("a-1", at(3)) || !tr.allocated("a-2", at(3)) {
		t.Fatal("Job a should run once its second pod is allocated, and only then")
	}
	if tr.allocated("a-2", at(3)) {
		t.Fatal("Job a should be reported running once")
	}
	tr.allocated("b-1", at(3))
	tr.sample(at(4))
	tr.finished("a", at(10))
	tr.placed("b-2", "b", 20480, at(11))
	tr.allocated("b-2", at(12))
	tr.sample(at(13))
	tr.finished("b", at(20))

	m := tr.measures(t0, at(21), 81920, false)
	if m.Jobs != 2 || m.Admitted != 2 || m.Running != 2 || m.Done != 2 {
		t.Errorf("Jobs %d, admitted %d, running %d, done %d; want 2 each", m.Jobs, m.Admitted, m.Running, m.Done)
	}
	if m.ToAdmitted.P99 != time.Second || m.ToRunning.P50 != 3*time.Second || m.ToRunning.P99 != 12*time.Second {
		t.Errorf("to admitted p99 %s, to running p50 %s p99 %s; want 1s, 3s, 12s", m.ToAdmitted.P99, m.ToRunning.P50, m.ToRunning.P99)
	}
	if m.Waited != 1 || m.Open != 0 || m.WaitedFor.P50 != 11*time.Second {
		t.Errorf("waited %d (open %d) for %s; want Job b alone, 11s from admission to running", m.Waited, m.Open, m.WaitedFor.P50)
	}
	if m.LastDone != 20*time.Second {
		t.Errorf("last Job done at %s, want 20s", m.LastDone)
	}
	// At 4 s a's 20 GiB work and b's 20 GiB is held idle; at 13 s b's 40 GiB works.
	if m.Memory.PeakUsed != 50 || m.Memory.MeanIdle != 12.5 || m.Memory.MeanWork != 37.5 {
		t.Errorf("memory: peak %.1f%%, mean idle %.1f%%, mean at work %.1f%%; want 50, 12.5, 37.5", m.Memory.PeakUsed, m.Memory.MeanIdle, m.Memory.MeanWork)
	}
	if got := m.Memory.String(); got != "4s: 50% (25% idle), 13s: 50% (0% idle)" {
		t.Errorf("series %q", got)
	}
}

// TestQueueTrackerMeasuresUpToTheStall pins that the quiet which declares
// a stall does not dilute the memory the queue held while it moved.
func TestQueueTrackerMeasuresUpToTheStall(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	tr := newQueueTracker(1, 30*time.Second, t0)
	tr.created("a", at(0))
	tr.created("never", at(0))
	tr.admitted("a", at(1))
	tr.placed("a-1", "a", 40960, at(2))
	tr.allocated("a-1", at(2))
	tr.sample(at(3))
	tr.finished("a", at(4))
	for s := 4; s <= 34; s++ {
		tr.sample(at(s))
	}
	m := tr.measures(t0, at(34), 81920, false)
	if m.Stall == nil || m.Stall.deadlock() || m.Stall.unadmitted != 1 {
		t.Fatalf("stall %+v, want one with a Job never admitted and no deadlock", m.Stall)
	}
	if m.Memory.PeakUsed != 50 || m.Memory.MeanWork != 25 {
		t.Errorf("memory: peak %.1f%%, mean at work %.1f%%; want 50 and 25, from the samples up to the last progress", m.Memory.PeakUsed, m.Memory.MeanWork)
	}
	if m.Done != 1 || m.LastDone != 4*time.Second {
		t.Errorf("%d done, the last at %s; want 1 at 4s", m.Done, m.LastDone)
	}
}

// TestQueueTrackerMeasuresFreeToAdmitted pins the free → admitted
// measure: from the last Job done before an admission to it, over the
// Jobs that waited through that free; a Job admitted before any free, or
// created after the last, has none.
func TestQueueTrackerMeasuresFreeToAdmitted(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tr := newQueueTracker(1, time.Minute, t0)
	for _, job := range []string{"first", "waits", "late"} {
		tr.created(job, at(0))
	}
	tr.admitted("first", at(100))
	tr.finished("first", at(5000))
	tr.finished("other", at(6000))
	tr.admitted("waits", at(6300))
	tr.created("after", at(7000))
	tr.admitted("after", at(7100))
	m := tr.measures(t0, at(8000), 81920, false)
	if m.FreeToAdmitted.Count != 1 || m.FreeToAdmitted.P50 != 300*time.Millisecond {
		t.Errorf("free → admitted: %d Jobs, p50 %s; want Job waits alone, 300ms after the last free", m.FreeToAdmitted.Count, m.FreeToAdmitted.P50)
	}
}

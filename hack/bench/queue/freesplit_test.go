package queue

import (
	"testing"
	"time"
)

// TestFreeSplit pins where the time from the last free to a Job's
// admission goes: the stages follow one another, a stage passed before
// the free counts 0, and only a Workload that held its quota through
// the free waited for GPUs only.
func TestFreeSplit(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name    string
		gangFit bool
		// sights are the Workload's gates seen at these times, in order.
		sights    []sight
		admitted  int
		want      freeSplit
		wantTotal time.Duration
	}{
		{
			name:     "without the check: quota reserved after the free, then admitted",
			sights:   []sight{{ms: 1400, quota: true}},
			admitted: 1500,
			want:     freeSplit{quota: 400 * time.Millisecond, admit: 100 * time.Millisecond},
		},
		{
			name:     "without the check: quota reserved and admitted in one write",
			sights:   []sight{{ms: 1700, quota: true}},
			admitted: 1700,
			want:     freeSplit{quota: 700 * time.Millisecond},
		},
		{
			name:     "with the check: quota held from before the free, the check turns Ready, then Kueue admits",
			gangFit:  true,
			sights:   []sight{{ms: 200, quota: true}, {ms: 1300, quota: true, checks: true}},
			admitted: 1350,
			want:     freeSplit{check: 300 * time.Millisecond, admit: 50 * time.Millisecond, quotaHeld: true},
		},
		{
			name:    "with the check: quota lost at Kueue's retry and reserved again after the free",
			gangFit: true,
			sights: []sight{
				{ms: 200, quota: true}, {ms: 600}, {ms: 2000, quota: true}, {ms: 2100, quota: true, checks: true},
			},
			admitted: 2200,
			want:     freeSplit{quota: time.Second, check: 100 * time.Millisecond, admit: 100 * time.Millisecond},
		},
		{
			name:     "with the check: Ready before the free counts 0 for the check",
			gangFit:  true,
			sights:   []sight{{ms: 200, quota: true, checks: true}},
			admitted: 1100,
			want:     freeSplit{admit: 100 * time.Millisecond, quotaHeld: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newQueueTracker(1, time.Minute, t0)
			tr.created("a", at(0))
			for _, s := range tt.sights {
				tr.workload("a", s.quota, s.checks, at(s.ms))
			}
			tr.workload("a", true, tt.gangFit, at(tt.admitted))
			tr.admitted("a", at(tt.admitted))
			free := at(1000)
			got := splitFree(tr.jobs["a"], free, tt.gangFit)
			if got != tt.want {
				t.Errorf("split %+v, want %+v", got, tt.want)
			}
			if sum := got.quota + got.check + got.admit; sum != at(tt.admitted).Sub(free) {
				t.Errorf("the stages add up to %s, want free → admitted %s", sum, at(tt.admitted).Sub(free))
			}
		})
	}
}

// sight is one sight of a Workload's gates by the bench's watch.
type sight struct {
	ms            int
	quota, checks bool
}

// TestQuotaHeldCountsOnlyJobsWaitingForGPUs pins the measure of the Jobs
// that held their quota at the free: a Job whose quota was reserved only
// after the free waited for Kueue too, and is left out of it.
func TestQuotaHeldCountsOnlyJobsWaitingForGPUs(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tr := newQueueTracker(1, time.Minute, t0)
	// Ten Jobs queued for Kueue's quota, admitted 1.1 s after the free at
	// the latest, and one that held its quota, admitted sooner than any.
	queued := []string{"q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8", "q9"}
	for _, job := range append([]string{"held"}, queued...) {
		tr.created(job, at(0))
	}
	tr.workload("held", true, false, at(100))
	tr.finished("other", at(1000))
	tr.workload("held", true, true, at(1020))
	tr.admitted("held", at(1050))
	for i, job := range queued {
		tr.workload(job, true, false, at(1900+10*i))
		tr.workload(job, true, true, at(2000+10*i))
		tr.admitted(job, at(2010+10*i))
	}

	m := tr.measures(t0, at(3000), 81920, true)
	if m.FreeToAdmitted.Count != 11 || m.FreeStages.GPUsOnly.Count != 1 || m.FreeStages.GPUsOnly.P50 != 50*time.Millisecond {
		t.Errorf("free → admitted over %d Jobs, of which waiting for GPUs only %d at p50 %s; want 11, and 1 at 50ms",
			m.FreeToAdmitted.Count, m.FreeStages.GPUsOnly.Count, m.FreeStages.GPUsOnly.P50)
	}
	if m.FreeStages.Quota.P99 != 990*time.Millisecond {
		t.Errorf("Kueue's quota p99 %s, want 990ms: the last queued Job's wait for it", m.FreeStages.Quota.P99)
	}
}

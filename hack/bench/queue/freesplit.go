package queue

import (
	"time"

	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

// workloadGates are the two gates a Workload passes before Kueue admits
// it: its quota reserved in the ClusterQueue, then its admission checks
// Ready (none in a run without gang-fit). Each time is when the gate last
// opened, as the bench's watch saw it; a gate that closes again (Kueue
// evicts a Workload whose check said Retry once its retry time comes)
// opens at a new time.
type workloadGates struct {
	quota, checks         time.Time
	quotaOpen, checksOpen bool
}

// see records the gates' state at one sight of the Workload.
func (g *workloadGates) see(quota, checks bool, at time.Time) {
	if quota && !g.quotaOpen {
		g.quota = at
	}
	if checks && !g.checksOpen {
		g.checks = at
	}
	g.quotaOpen, g.checksOpen = quota, checks
}

// freeSplit is where the time from the last free before a Job's admission
// to the admission went, in three stages one after the other: waiting for
// Kueue's quota, then for the admission check to turn Ready, then for
// Kueue to admit once it had. A stage that passed before the free is 0.
type freeSplit struct {
	quota, check, admit time.Duration
	// quotaHeld is whether the Workload held its quota from before the
	// free until its admission: it waited for GPUs only.
	quotaHeld bool
}

// splitFree splits the time from free to the Job's admission; gangFit
// says whether the Workload passed an admission check.
func splitFree(j *jobRecord, free time.Time, gangFit bool) freeSplit {
	quota := later(free, j.gates.quota)
	s := freeSplit{quota: quota.Sub(free), quotaHeld: !j.gates.quota.After(free)}
	ready := quota
	if gangFit {
		ready = later(quota, j.gates.checks)
		s.check = ready.Sub(quota)
	}
	s.admit = max(j.admitted.Sub(ready), 0)
	return s
}

// freeStages are the quantiles of the stages of free → admitted over a
// run's Jobs, and free → admitted over the Jobs that waited for GPUs only.
type freeStages struct {
	Quota, Check, Admit meter.Quantiles
	// GPUsOnly is free → admitted over the Jobs that held their quota at
	// the free: the wait the gang-fit check answers for.
	GPUsOnly meter.Quantiles
}

// stages sums up the splits.
func stages(splits []freeSplit) freeStages {
	var quota, check, admit, gpusOnly []time.Duration
	for _, s := range splits {
		quota, check, admit = append(quota, s.quota), append(check, s.check), append(admit, s.admit)
		if s.quotaHeld {
			gpusOnly = append(gpusOnly, s.quota+s.check+s.admit)
		}
	}
	return freeStages{
		Quota: meter.SampleQuantiles(quota), Check: meter.SampleQuantiles(check),
		Admit: meter.SampleQuantiles(admit), GPUsOnly: meter.SampleQuantiles(gpusOnly),
	}
}

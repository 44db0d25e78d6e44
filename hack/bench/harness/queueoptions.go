package harness

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// ModeQueue runs Jobs through Kueue onto a fragmented cluster, without
// and with Tessera's gang-fit admission check.
const ModeQueue = "queue"

// queueNodes is queue mode's --nodes when the flag is not given: its Jobs
// go through Kueue and the job controller, each far slower than a bind.
const queueNodes = 20

// maxJobs bounds --jobs, and maxPodsPerJob --pods-per-job.
const (
	maxJobs       = 10000
	maxPodsPerJob = 64
)

// QueueOptions are the flags of queue mode.
type QueueOptions struct {
	// Jobs is how many batch/v1 Jobs are submitted to Kueue, all at once.
	Jobs int
	// PodsPerJob is each Job's parallelism and completions.
	PodsPerJob int
	// JobDuration is how long a Job works once all its pods run; its pods
	// then succeed. A Job whose pods do not all run does no work, as a
	// distributed job waits at its rendezvous.
	JobDuration time.Duration
	// Stall is how long nothing may progress (no Job admitted, no pod
	// placed, no Job done) while admitted Jobs hold pods Pending before
	// the run is declared deadlocked and ended.
	Stall time.Duration
	// Seed picks the fragments the earlier pods leave; both runs use it.
	Seed uint64
}

func defaultQueueOptions() QueueOptions {
	return QueueOptions{Jobs: 100, PodsPerJob: 4, JobDuration: 20 * time.Second, Stall: time.Minute, Seed: 1}
}

func (q *QueueOptions) addFlags(fs *pflag.FlagSet) {
	fs.IntVar(&q.Jobs, "jobs", q.Jobs, fmt.Sprintf("Queue mode: batch/v1 Jobs submitted to Kueue at once (1 to %d).", maxJobs))
	fs.IntVar(&q.PodsPerJob, "pods-per-job", q.PodsPerJob, fmt.Sprintf("Queue mode: pods of each Job (1 to %d).", maxPodsPerJob))
	fs.DurationVar(&q.JobDuration, "job-duration", q.JobDuration, "Queue mode: how long a Job works once all its pods run; then its pods succeed.")
	fs.DurationVar(&q.Stall, "stall", q.Stall, "Queue mode: how long nothing may progress while admitted Jobs hold pods Pending before the run is declared deadlocked; more than --job-duration.")
	fs.Uint64Var(&q.Seed, "seed", q.Seed, "Queue mode: seed of the fragments the earlier pods leave, the same for both runs.")
}

// complete gives queue mode its defaults: Tessera's extender (row c) and
// queueNodes nodes unless --nodes says otherwise.
func (q *QueueOptions) complete(o *Options, fs *pflag.FlagSet) {
	if o.Mode != ModeQueue {
		return
	}
	o.Rows = []string{RowTessera}
	if !fs.Changed("nodes") {
		o.Nodes = queueNodes
	}
}

func (q *QueueOptions) validate() error {
	switch {
	case q.Jobs < 1 || q.Jobs > maxJobs:
		return fmt.Errorf("--jobs=%d: must be from 1 to %d", q.Jobs, maxJobs)
	case q.PodsPerJob < 1 || q.PodsPerJob > maxPodsPerJob:
		return fmt.Errorf("--pods-per-job=%d: must be from 1 to %d", q.PodsPerJob, maxPodsPerJob)
	case q.JobDuration < time.Second:
		return fmt.Errorf("--job-duration=%s: must be at least 1s", q.JobDuration)
	case q.Stall <= q.JobDuration:
		return fmt.Errorf("--stall=%s: must be more than --job-duration=%s, or a Job at work looks stalled", q.Stall, q.JobDuration)
	}
	return nil
}

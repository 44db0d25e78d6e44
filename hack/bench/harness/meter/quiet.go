package meter

import (
	"context"
	"time"

	"k8s.io/klog/v2"
)

// quiet is when the processes of one run count as idle. The scale mode
// times the extender's calls, not the API server's and etcd's work on the
// objects the bench has just created, so it waits for that work to end.
type quiet struct {
	// share is the share of one CPU under which the processes are idle.
	share float64
	// interval is how long each sample of their CPU use lasts.
	interval time.Duration
	// max bounds the wait: past it the probes start anyway.
	max time.Duration
}

// Settled is what the scale mode waits for before its probes.
var Settled = quiet{share: 0.1, interval: 2 * time.Second, max: time.Minute}

// Wait returns once the processes the run started in dir (the control
// plane and the extender) together use less than q.share of a CPU over
// q.interval, or q.max has passed: how long it waited, and whether they
// were idle by then.
func (q quiet) Wait(ctx context.Context, dir string) (time.Duration, bool, error) {
	start := time.Now()
	before := SampleCPU(dir)
	for {
		select {
		case <-ctx.Done():
			return 0, false, context.Cause(ctx)
		case <-time.After(q.interval):
		}
		now := SampleCPU(dir)
		used := now.Since(before)
		delete(used, "bench")
		share := used.Total().Seconds() / q.interval.Seconds()
		waited := time.Since(start)
		if share < q.share || waited >= q.max {
			klog.FromContext(ctx).Info("Waited for the run's processes to go idle", "after", waited.Round(time.Second),
				"cpuShare", share, "idle", share < q.share)
			return waited, share < q.share, nil
		}
		before = now
	}
}

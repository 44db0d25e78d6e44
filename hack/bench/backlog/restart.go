package backlog

import (
	"context"
	"time"

	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

// Restart is what --backlog-restart measured of a row's scheduler
// restarted under the backlog, as a new leader takes over.
type Restart struct {
	// Gated is how many waiting pods kube-scheduler's queue still held
	// gated when the scheduler stopped, after Settle of waiting for
	// them to leave it (parked, with tessera-scheduler's fit gate).
	Gated  int
	Settle time.Duration
	// Ready is from the new scheduler's start until it was ready, and
	// Warmup until it had tried every waiting pod once; Settled is false
	// when --backlog-warmup passed first.
	Ready, Warmup time.Duration
	Settled       bool
}

// restart waits until kube-scheduler's queue holds at most a hundredth of
// the backlog gated, or --backlog-warmup passes, then stops the scheduler
// and starts it again, and waits for it to try every waiting pod once.
// It returns the new scheduler's scraper.
func restart(ctx context.Context, r *harness.Runner, env *harness.ClusterEnv, sched *harness.RowScheduler, scraper *harness.SchedulerScraper, res *BacklogRow) (*harness.SchedulerScraper, error) {
	logger := klog.FromContext(ctx)
	rs := &Restart{}
	start := time.Now()
	for {
		families, err := scraper.Scrape(ctx)
		if err != nil {
			return nil, err
		}
		rs.Gated = int(meter.ValuesBy(families, harness.PendingPodsMetric, "queue")["gated"])
		if rs.Gated <= res.Backlog/100 || time.Since(start) >= r.Options.BacklogWarmup {
			break
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(time.Second):
		}
	}
	rs.Settle = time.Since(start)
	sched.Proc.Stop()
	logger.Info("Restarting the scheduler", "gated", rs.Gated, "after", rs.Settle.Round(time.Second))
	scraper, up, err := startTried(ctx, r, env, sched)
	if err != nil {
		return nil, err
	}
	rs.Ready, rs.Warmup, rs.Settled = up.ready, up.tried, up.settled
	logger.Info("Restarted", "ready", rs.Ready.Round(100*time.Millisecond), "triedAll", rs.Settled, "after", rs.Warmup.Round(time.Second))
	res.Restart = rs
	return scraper, nil
}

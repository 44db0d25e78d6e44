package backlog

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

// parkQuiet is how long no waiting pod may gain the parked label before
// restart takes parking as over (or never begun: only tessera-scheduler
// parks, and it labels a pod 2 s after holding it).
const parkQuiet = 10 * time.Second

// Restart is what --backlog-restart measured of a row's scheduler
// restarted under the backlog, as a new leader takes over.
type Restart struct {
	// Gated is how many waiting pods kube-scheduler's queue still held
	// gated when the scheduler stopped, but those the extender's fit gate
	// holds, and Unparked how many waiting
	// pods were not labelled parked, after Settle of waiting for them to
	// leave the queue (parked, with tessera-scheduler's fit gate).
	Gated, Unparked int
	Settle          time.Duration
	// Ready is from the new scheduler's start until it was ready, and
	// Warmup until it had tried every waiting pod once; Settled is false
	// when --backlog-warmup passed first.
	Ready, Warmup time.Duration
	Settled       bool
}

// restart waits until the scheduler has taken the backlog out of its
// queue's way, or --backlog-warmup passes, then stops the scheduler and
// starts it again, and waits for it to try every waiting pod once. Out of
// the way is at most a hundredth of the backlog gated in kube-scheduler's
// queue and either at most a hundredth waiting unparked or no pod parked
// for parkQuiet: tessera-scheduler hides the pods it holds from the queue
// at once, and a restart reads all but the labelled ones. It returns the
// new scheduler's scraper.
func restart(ctx context.Context, r *harness.Runner, env *harness.ClusterEnv, sched *harness.RowScheduler, scraper *harness.SchedulerScraper, pods corelisters.PodLister, res *BacklogRow) (*harness.SchedulerScraper, error) {
	logger := klog.FromContext(ctx)
	rs := &Restart{}
	start := time.Now()
	lastParked, parkedAt := -1, start
	for {
		families, err := scraper.Scrape(ctx)
		if err != nil {
			return nil, err
		}
		held, err := fitGateHeld(sched)(ctx)
		if err != nil {
			return nil, err
		}
		// The pods the extender's fit gate holds gated are out of the way.
		rs.Gated = int(meter.ValuesBy(families, harness.PendingPodsMetric, "queue")["gated"] - held)
		var parked int
		parked, rs.Unparked, err = waitingParked(pods)
		if err != nil {
			return nil, err
		}
		if parked != lastParked {
			lastParked, parkedAt = parked, time.Now()
		}
		parkedOut := rs.Unparked <= res.Backlog/100 || time.Since(parkedAt) >= parkQuiet
		if rs.Gated <= res.Backlog/100 && parkedOut || time.Since(start) >= r.Options.BacklogWarmup {
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
	logger.Info("Restarting the scheduler", "gated", rs.Gated, "unparked", rs.Unparked, "after", rs.Settle.Round(time.Second))
	scraper, up, err := startTried(ctx, r, env, sched, res.Backlog)
	if err != nil {
		return nil, err
	}
	rs.Ready, rs.Warmup, rs.Settled = up.ready, up.tried, up.settled
	logger.Info("Restarted", "ready", rs.Ready.Round(100*time.Millisecond), "triedAll", rs.Settled, "after", rs.Warmup.Round(time.Second))
	res.Restart = rs
	return scraper, nil
}

// waitingParked counts the unbound pods the bench watches that carry the
// parked label and those that do not.
func waitingParked(pods corelisters.PodLister) (parked, unparked int, err error) {
	all, err := pods.List(labels.Everything())
	if err != nil {
		return 0, 0, err
	}
	for _, pod := range all {
		switch {
		case pod.Spec.NodeName != "" || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed:
		case hasLabel(pod, gpuv1alpha1.ParkedLabel):
			parked++
		default:
			unparked++
		}
	}
	return parked, unparked, nil
}

func hasLabel(pod *v1.Pod, key string) bool {
	_, ok := pod.Labels[key]
	return ok
}

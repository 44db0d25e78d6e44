package harness

import (
	"context"

	dto "github.com/prometheus/client_model/go"

	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
	"github.com/tessera-gpu/tessera/test/framework"
)

// Metrics the bench reads from kube-scheduler (and tessera-scheduler).
const (
	// ScheduleAttemptsMetric counts scheduling attempts by result
	// (scheduled, unschedulable, error) and profile.
	ScheduleAttemptsMetric = "scheduler_schedule_attempts_total"
	// PendingPodsMetric is the pods in each of the scheduler's queues
	// (active, backoff, unschedulable, gated).
	PendingPodsMetric = "scheduler_pending_pods"
	// BatchAttemptsMetric counts, by result and profile, the pods for
	// which opportunistic batching had a node from the pod before
	// (hint_used when the pod went there) or none (no_hint).
	BatchAttemptsMetric = "scheduler_batch_attempts_total"
	// BatchFlushedMetric counts, by reason, the times opportunistic
	// batching dropped the nodes it carried over (the next pod's signature
	// differed, they had aged, the pod before failed, ...).
	BatchFlushedMetric = "scheduler_batch_cache_flushed_total"
	// AlgorithmDurationMetric is how long each attempt's filtering and
	// scoring took.
	AlgorithmDurationMetric = "scheduler_scheduling_algorithm_duration_seconds"
)

// SchedulerScraper reads a running scheduler's /metrics on its secure
// port (see framework.SchedulerClient).
type SchedulerScraper struct {
	*framework.SchedulerClient
}

// NewSchedulerScraper reads the metrics of the scheduler process pid.
func NewSchedulerScraper(cp *framework.ControlPlane, pid int) (*SchedulerScraper, error) {
	client, err := framework.NewSchedulerClient(cp, pid)
	if err != nil {
		return nil, err
	}
	return &SchedulerScraper{client}, nil
}

// Scrape reads the scheduler's metrics.
func (s *SchedulerScraper) Scrape(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	families, _, err := meter.ScrapeWith(ctx, s.Client, s.Base+"/metrics")
	return families, err
}

package harness

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/rest"

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
	// AlgorithmDurationMetric is how long each attempt's filtering and
	// scoring took.
	AlgorithmDurationMetric = "scheduler_scheduling_algorithm_duration_seconds"
)

// SchedulerScraper reads a running scheduler's /metrics on its secure
// port as the control plane's admin, whose client certificate the
// scheduler checks through kube-apiserver like any delegated
// authentication.
type SchedulerScraper struct {
	client *http.Client
	// base is the scheduler's https://host:port.
	base string
}

// NewSchedulerScraper finds the secure port of the scheduler process pid
// on its command line, where the framework gave it.
func NewSchedulerScraper(cp *framework.ControlPlane, pid int) (*SchedulerScraper, error) {
	port, err := securePort(pid)
	if err != nil {
		return nil, err
	}
	config := rest.CopyConfig(cp.Config)
	config.Host = "https://127.0.0.1:" + strconv.Itoa(port)
	// The scheduler serves a certificate it signed itself.
	config.Insecure, config.CAData, config.CAFile = true, nil, ""
	client, err := rest.HTTPClientFor(config)
	if err != nil {
		return nil, fmt.Errorf("a client for the scheduler's metrics: %w", err)
	}
	return &SchedulerScraper{client: client, base: config.Host}, nil
}

// securePort reads --secure-port from a process's command line.
func securePort(pid int) (int, error) {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the scheduler's command line: %w", err)
	}
	const flag = "--secure-port="
	for _, arg := range bytes.Split(cmdline, []byte{0}) {
		if v, ok := bytes.CutPrefix(arg, []byte(flag)); ok {
			return strconv.Atoi(string(v))
		}
	}
	return 0, fmt.Errorf("process %d has no %s flag", pid, flag)
}

// Scrape reads the scheduler's metrics.
func (s *SchedulerScraper) Scrape(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	families, _, err := meter.ScrapeWith(ctx, s.client, s.base+"/metrics")
	return families, err
}

// Package rows is the bench's default mode: rows a to e schedule one
// workload on a fresh control plane each, and the table compares their
// throughput, latency and costs.
package rows

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

// Run runs each row asked for, each on a fresh control plane, and reports them.
func Run(ctx context.Context, r *harness.Runner) Table {
	o := r.Options
	table := Table{Title: fmt.Sprintf("%d nodes × %d GPUs (split %d), %d pods: %s; %s",
		o.Nodes, o.GPUsPerNode, o.Split, o.Pods, o.Mix(), r.Where())}
	var loads []string
	for _, row := range harness.AllRows() {
		if !o.Wants(row) {
			continue
		}
		loads = append(loads, fmt.Sprintf("%s: %s", row, meter.LoadAverage()))
		table.Rows = append(table.Rows, runRow(ctx, r, row))
		if ctx.Err() != nil {
			break
		}
	}
	table.Notes = append(table.Notes, "load average (1, 5, 15 min) before each row: "+strings.Join(loads, "; "))
	return table
}

// Failed says which row did not finish, if one did not.
func (t Table) Failed() error {
	for _, row := range t.Rows {
		if row.Err != nil {
			return fmt.Errorf("row %s did not finish", row.Row)
		}
	}
	return nil
}

// runRow runs one row on a fresh control plane. A row that fails says why
// in its Err, with what it measured until then.
func runRow(ctx context.Context, r *harness.Runner, row string) RowResult {
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "row", row)
	ctx = klog.NewContext(ctx, logger)
	res := RowResult{Row: row, Name: r.Name(row), Pods: r.Options.Pods, APIRequests: -1, Pinning: r.Pin}
	if harness.HasExtender(row) {
		res.APIRequests = 0
	}
	res.Err = measureRow(ctx, r, row, &res)
	if res.Err != nil {
		logger.Error(res.Err, "Row failed")
	}
	return res
}

// measureRow creates the row's pods on a fresh control plane, starts its
// scheduler and measures until every pod is bound.
func measureRow(ctx context.Context, r *harness.Runner, row string, res *RowResult) error {
	var created *harness.CreateTimes
	binds := harness.NewBindRecorder(r.Options.Pods)
	ctx, c, err := r.StartRowCluster(ctx, row, func(ctx context.Context, env *harness.ClusterEnv) (err error) {
		created, err = harness.CreatePods(ctx, env, r.Options.Workers, r.Options.Mix().Sequence(r.Options.Pods), 0, harness.RowForm(row))
		return err
	}, func(watches *harness.Informers) error {
		_, err := watches.Kube.Core().V1().Pods().Informer().AddEventHandler(binds.Handler())
		return err
	})
	if err != nil {
		return err
	}
	defer c.Stop()
	return measureBinds(ctx, r, row, c.Env, c.Sched, created, binds, c.Watches.Kube.Core().V1().Pods().Lister(), c.Kubelet, res)
}

// measureBinds starts the row's scheduler, waits for every pod to be bound
// and measures what the binds cost.
func measureBinds(ctx context.Context, r *harness.Runner, row string, env *harness.ClusterEnv, sched *harness.RowScheduler,
	created *harness.CreateTimes, binds *harness.BindRecorder, pods corelisters.PodLister, kubelet *harness.KubeletSim, res *RowResult) error {
	logger := klog.FromContext(ctx)
	extender := sched.Extender
	writesBefore, err := meter.SampleAPIWrites(ctx, env.ControlPlane.Kube)
	if err != nil {
		return err
	}
	cpuBefore := meter.SampleCPU(env.Dir)
	start := time.Now()
	if err := sched.Start(ctx, env); err != nil {
		return err
	}
	if err := r.PinRow(env); err != nil {
		return err
	}
	profiles := &harness.Profiler{Seconds: r.Options.ProfileSeconds}
	var extenderURL string
	if extender != nil {
		extenderURL = extender.URL
	}
	profiles.Start(ctx, env, extenderURL)
	if r.Options.ProfileSeconds > 0 {
		scraper, err := harness.NewSchedulerScraper(env.ControlPlane, sched.Proc.Pid())
		if err != nil {
			return err
		}
		profiles.StartScheduler(ctx, env, scraper, sched.Name)
	}
	defer profiles.Wait()
	waitErr := harness.WaitAllBound(ctx, binds, r.Options.Timeout, sched.Check)

	res.CPU = meter.SampleCPU(env.Dir).Since(cpuBefore)
	bound, last, latencies := binds.Snapshot(created, start)
	res.Bound = bound
	if bound > 0 {
		res.Duration = last.Sub(start)
	}
	res.Latency = meter.SampleQuantiles(latencies)
	_, _, rawLatencies := binds.Snapshot(created, time.Time{})
	rawQ := meter.SampleQuantiles(rawLatencies)
	logger.Info("Row measured", "bound", bound, "pods", r.Options.Pods, "duration", res.Duration.Round(time.Millisecond),
		"podsPerSecond", fmt.Sprintf("%.1f", res.Throughput()),
		"createToBoundP50", rawQ.P50.Round(time.Millisecond), "createToBoundP99", rawQ.P99.Round(time.Millisecond))
	logger.Info("CPU time used during the row", "cpu", res.CPU.String())
	if kubelet != nil {
		logger.Info("Allocations completed by the simulated kubelet", "count", kubelet.Completed.Load())
	}

	if err := waitVerbs(ctx, sched, bound, res); err != nil {
		return err
	}
	if err := measureCosts(ctx, r, row, env, sched, pods, kubelet, writesBefore, res); err != nil {
		return err
	}
	if err := measureCycles(ctx, env, sched, res); err != nil {
		return err
	}
	if waitErr != nil {
		return fmt.Errorf("%d of %d pods bound: %w (logs in %s)", bound, r.Options.Pods, waitErr, env.Dir)
	}
	return nil
}

// measureCycles reads from the scheduler's metrics its scheduling
// attempts, how long filtering and scoring took in each, and how many
// pods it placed on the node its opportunistic batching carried over from
// the pod before.
func measureCycles(ctx context.Context, env *harness.ClusterEnv, sched *harness.RowScheduler, res *RowResult) error {
	scraper, err := harness.NewSchedulerScraper(env.ControlPlane, sched.Proc.Pid())
	if err != nil {
		return err
	}
	families, err := scraper.Scrape(ctx)
	if err != nil {
		return err
	}
	res.Attempts = int(meter.CounterSum(families, harness.ScheduleAttemptsMetric))
	res.Batched = int(meter.ValuesBy(families, harness.BatchAttemptsMetric, "result")["hint_used"])
	res.Flushed = meter.Counts(meter.ValuesBy(families, harness.BatchFlushedMetric, "reason"))
	if m := families[harness.AlgorithmDurationMetric].GetMetric(); len(m) == 1 && m[0].GetHistogram().GetSampleCount() > 0 {
		h := m[0].GetHistogram()
		res.AlgorithmMean = time.Duration(h.GetSampleSum() / float64(h.GetSampleCount()) * float64(time.Second))
	}
	return nil
}

// waitVerbs reads the extender's latencies by verb, waiting up to five
// seconds for its histograms to hold every bind: a bind is observed in the
// histogram just after the pod is bound, so the last ones may not be in it
// yet when the watch reports the bind.
func waitVerbs(ctx context.Context, sched *harness.RowScheduler, bound int, res *RowResult) error {
	noop, extender := sched.Noop, sched.Extender
	verbs := func() (map[string]meter.Quantiles, error) { return nil, nil }
	switch {
	case noop != nil:
		verbs = noop.Quantiles
	case extender != nil:
		verbs = func() (map[string]meter.Quantiles, error) {
			families, err := meter.Scrape(ctx, extender.URL+"/metrics")
			if err != nil {
				return nil, err
			}
			res.BindQueueWait = meter.HistogramOf(families, meter.BindQueueWaitMetric)
			return meter.VerbQuantiles(families, meter.ExtenderDurationMetric), nil
		}
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		var err error
		if res.Verbs, err = verbs(); err != nil {
			return err
		}
		if res.Verbs == nil || res.Verbs[harness.VerbBind].Count >= uint64(bound) || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// writesSince samples the API writes made since before, waiting up to 5 s
// for kube-apiserver to count a binding for each of the bound pods: it
// counts a request once its handler returns, which can be after a watcher
// has seen the pod bound.
func writesSince(ctx context.Context, env *harness.ClusterEnv, before meter.APIWrites, bound int) (meter.APIWrites, error) {
	for deadline := time.Now().Add(5 * time.Second); ; {
		after, err := meter.SampleAPIWrites(ctx, env.ControlPlane.Kube)
		if err != nil {
			return nil, err
		}
		writes := after.Since(before)
		if writes["pods/binding"] >= float64(bound) || time.Now().After(deadline) {
			return writes, nil
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// measureCosts measures the extender's peak memory, the API writes since
// writesBefore, the extender's API requests and, in row c, the bind cycle.
func measureCosts(ctx context.Context, r *harness.Runner, row string, env *harness.ClusterEnv, sched *harness.RowScheduler,
	pods corelisters.PodLister, kubelet *harness.KubeletSim, writesBefore meter.APIWrites, res *RowResult) error {
	logger := klog.FromContext(ctx)
	if extender := sched.Extender; extender != nil {
		var err error
		if _, res.PeakRSSBytes, err = extender.Memory(); err != nil {
			return err
		}
	}
	var err error
	if res.Writes, err = writesSince(ctx, env, writesBefore, res.Bound); err != nil {
		return err
	}
	logger.Info("API writes while scheduling", "total", res.Writes.Total(), "perPod", res.Writes.PerPod(max(res.Bound, 1)))
	if harness.HasExtender(row) {
		count, err := meter.CountRequestsInFile(env.AuditLog, meter.ExtenderUser)
		if err != nil {
			return err
		}
		res.APIRequests = count.Total
		logger.Info("Extender API requests", "total", count.Total, "byKind", count.String())
	}
	if row == harness.RowTessera {
		cycle, err := auditBindCycle(ctx, r, env, pods, kubelet)
		if err != nil {
			return err
		}
		res.Cycle = &cycle
		logger.Info("Bind cycle on a node", "cycle", cycle.String())
	}
	return nil
}

// bindCycle times the steps of Tessera's binds from the audit log, the
// pods' nodes and the simulated kubelet's records.
func auditBindCycle(ctx context.Context, r *harness.Runner, env *harness.ClusterEnv, pods corelisters.PodLister, kubelet *harness.KubeletSim) (BindCycle, error) {
	timelines := map[string]*podTimeline{}
	list, err := pods.List(labels.Everything())
	if err != nil {
		return BindCycle{}, err
	}
	for _, p := range list {
		timelines[p.Name] = &podTimeline{node: p.Spec.NodeName}
	}
	for name, at := range kubelet.Allocated() {
		if p, ok := timelines[name]; ok {
			p.allocated = at
		}
	}
	if err := timelinesFromAudit(env.AuditLog, meter.ExtenderUser, timelines); err != nil {
		return BindCycle{}, err
	}
	return bindCycle(timelines), nil
}

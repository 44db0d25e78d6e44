// Package backlog is the bench's backlog mode: rows c, d and e on a full
// cluster with pods waiting, while running pods end.
package backlog

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// Backlog mode's fixed settings.
const (
	// BacklogFactor is how many times what fits the cluster waits.
	BacklogFactor = 3
	// backlogTail is how long binds are still watched after the last
	// pod ends, so that the last frees have time to be taken.
	backlogTail = 10 * time.Second
)

// BacklogRow is what backlog mode measured for one row.
type BacklogRow struct {
	// Row is c, d or e; Name says what ran.
	Row, Name string
	// Filled pods ran before the scheduler started; Backlog pods waited.
	Filled, Backlog int
	// Warmup is from the scheduler's start until it had tried every
	// waiting pod once (its active and backoff queues empty), or until
	// --backlog-warmup passed: then Settled is false.
	Warmup  time.Duration
	Settled bool
	// WarmupBinds are waiting pods bound during the warm-up.
	WarmupBinds int
	// Ending is how long the bench ended pods, Window from the first pod
	// ended to the end of the tail.
	Ending, Window time.Duration
	backlogMeasures
	// Attempts are the scheduler's scheduling attempts in the window.
	Attempts float64
	// CPU is every process's CPU time in the window.
	CPU meter.CPUUsage
	// Writes are the write requests kube-apiserver served in the window.
	Writes meter.APIWrites
	// ConsistencyChecks are the checks of kube-apiserver's watch cache
	// against etcd in the window, by resource.
	ConsistencyChecks meter.Counts
	// Restart is the scheduler's restart before the window, with
	// --backlog-restart; nil without.
	Restart *Restart
	// Pinning is where the control plane and the rest ran; nil when shared.
	Pinning *harness.Pinning
	// Err is why the row did not finish, if it did not.
	Err error
}

// Run runs each backlog row on a fresh control plane and reports them.
func Run(ctx context.Context, r *harness.Runner) BacklogTable {
	o := r.Options
	return BacklogTable{
		Title: fmt.Sprintf("Backlog: %d nodes × %d GPUs (split %d) filled, %d× as many pods waiting (%s), %g pods ending a second for %s; %s",
			o.Nodes, o.GPUsPerNode, o.Split, BacklogFactor, harness.DefaultMix(), o.FinishRate, o.BacklogDuration, r.Where()),
		Rows: runRows(ctx, r),
	}
}

// runRows runs each backlog row on a fresh control plane.
func runRows(ctx context.Context, r *harness.Runner) []BacklogRow {
	var rows []BacklogRow
	for _, row := range harness.AllBacklogRows() {
		if !r.Options.Wants(row) {
			continue
		}
		logger := klog.LoggerWithValues(klog.FromContext(ctx), "row", row)
		res := BacklogRow{Row: row, Name: r.Name(row), Pinning: r.Pin}
		res.Err = measureBacklog(klog.NewContext(ctx, logger), r, row, &res)
		if res.Err != nil {
			logger.Error(res.Err, "Row failed")
		}
		rows = append(rows, res)
		if ctx.Err() != nil {
			break
		}
	}
	return rows
}

// measureBacklog fills the row's cluster, queues the backlog, starts the
// scheduler and, once it has tried every waiting pod, ends running pods
// at --finish-rate for --backlog-duration while it watches the binds.
func measureBacklog(ctx context.Context, r *harness.Runner, row string, res *BacklogRow) error {
	form := harness.RowForm(row)
	var tracker *backlogTracker
	var pods corelisters.PodLister
	ctx, c, err := r.StartRowCluster(ctx, row, func(ctx context.Context, env *harness.ClusterEnv) (err error) {
		tracker, err = fill(ctx, r, env, form, res)
		return err
	}, func(watches *harness.Informers) error {
		pods = watches.Kube.Core().V1().Pods().Lister()
		return watchBacklogBinds(watches, tracker, form, r.Options.GPUsPerNode)
	})
	if err != nil {
		return err
	}
	defer c.Stop()
	scraper, err := warmUp(ctx, r, c.Env, c.Sched, tracker, res)
	if err != nil {
		return err
	}
	if r.Options.BacklogRestart {
		if scraper, err = restart(ctx, r, c.Env, c.Sched, scraper, pods, res); err != nil {
			return err
		}
	}
	if err := measureWindow(ctx, r, c.Env, form, c.Sched, scraper, tracker, res); err != nil {
		return err
	}
	return c.Sched.Check()
}

// fill fills the row's cluster with running pods and creates the backlog
// waiting behind them, and returns the tracker that follows both.
func fill(ctx context.Context, r *harness.Runner, env *harness.ClusterEnv, form harness.PodForm, res *BacklogRow) (*backlogTracker, error) {
	view, err := newBacklogView(r.Options.Nodes, r.Options.GPUsPerNode, r.Options.Split, harness.DefaultMix())
	if err != nil {
		return nil, err
	}
	tracker := newBacklogTracker(view)
	filled, err := fillCluster(ctx, env, view, form, r.Options.Workers)
	if err != nil {
		return nil, err
	}
	for i, f := range filled {
		tracker.run(harness.PodName(i), f.node, placement.Holds(f.containers))
	}
	res.Filled, res.Backlog = len(filled), BacklogFactor*len(filled)
	shapes := harness.DefaultMix().Sequence(res.Backlog)
	for i, s := range shapes {
		tracker.wait(harness.PodName(res.Filled+i), view.shapeIndex(s.Name))
	}
	if _, err := harness.CreatePods(ctx, env, r.Options.Workers, shapes, res.Filled, form); err != nil {
		return nil, err
	}
	return tracker, nil
}

// warmUp starts the scheduler and waits for it to have tried every
// waiting pod once.
func warmUp(ctx context.Context, r *harness.Runner, env *harness.ClusterEnv, sched *harness.RowScheduler, tracker *backlogTracker, res *BacklogRow) (*harness.SchedulerScraper, error) {
	tracker.scan(time.Now())
	scraper, up, err := startTried(ctx, r, env, sched, res.Backlog)
	if err != nil {
		return nil, err
	}
	res.Warmup, res.Settled = up.tried, up.settled
	res.WarmupBinds = res.Backlog - tracker.waitingCount()
	klog.FromContext(ctx).Info("Warm-up over", "after", res.Warmup.Round(time.Second), "settled", res.Settled, "bound", res.WarmupBinds)
	return scraper, nil
}

// startup is when a started scheduler was ready and had tried every
// waiting pod once, since it started; settled is false when
// --backlog-warmup passed first.
type startup struct {
	ready, tried time.Duration
	settled      bool
}

// startTried starts the scheduler, pins the row, and waits for the
// scheduler to try every one of the backlog's waiting pods once. It
// returns the scraper on it.
func startTried(ctx context.Context, r *harness.Runner, env *harness.ClusterEnv, sched *harness.RowScheduler, backlog int) (*harness.SchedulerScraper, startup, error) {
	var s startup
	start := time.Now()
	if err := sched.Start(ctx, env); err != nil {
		return nil, s, err
	}
	s.ready = time.Since(start)
	if err := r.PinRow(env); err != nil {
		return nil, s, err
	}
	scraper, err := harness.NewSchedulerScraper(env.ControlPlane, sched.Proc.Pid())
	if err != nil {
		return nil, s, err
	}
	if s.settled, err = waitTried(ctx, scraper, backlog, r.Options.BacklogWarmup, sched.Check, fitGateHeld(sched)); err != nil {
		return nil, s, err
	}
	s.tried = time.Since(start)
	return scraper, s, nil
}

// measureWindow ends running pods at --finish-rate for --backlog-duration
// and measures how the scheduler keeps up, and what that costs.
func measureWindow(ctx context.Context, r *harness.Runner, env *harness.ClusterEnv, form harness.PodForm, sched *harness.RowScheduler,
	scraper *harness.SchedulerScraper, tracker *backlogTracker, res *BacklogRow) error {
	logger := klog.FromContext(ctx)
	before, err := scraper.Scrape(ctx)
	if err != nil {
		return err
	}
	apiBefore, err := meter.SampleAPIServer(ctx, env.ControlPlane.Kube)
	if err != nil {
		return err
	}
	cpuBefore := meter.SampleCPU(env.Dir)
	windowStart := time.Now()
	tracker.start(windowStart)
	profiles := &harness.Profiler{Seconds: r.Options.ProfileSeconds}
	extenderURL := ""
	if sched.Extender != nil {
		extenderURL = sched.Extender.URL
	}
	profiles.Start(ctx, env, extenderURL)
	profiles.StartScheduler(ctx, env, scraper, sched.Name)
	defer profiles.Wait()
	finish := deletePodAndAllocation(env.ControlPlane.Kube, env.ControlPlane.Tessera)
	if form == harness.FormClaim {
		finish = deletePodAndDeallocate(env.ControlPlane.Kube)
	}
	rng := rand.New(rand.NewPCG(uint64(r.Options.Nodes), uint64(res.Filled)))
	ended, err := finishPods(ctx, tracker, r.Options.FinishRate, r.Options.BacklogDuration, rng, finish)
	if err != nil {
		return fmt.Errorf("ending pods: %w", err)
	}
	res.Ending = time.Since(windowStart)
	logger.Info("Ended pods", "pods", ended, "rate", fmt.Sprintf("%.1f/s", float64(ended)/res.Ending.Seconds()))
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(backlogTail):
	}
	end := time.Now()
	res.backlogMeasures = tracker.finish(end)
	res.Window = end.Sub(windowStart)
	res.CPU = meter.SampleCPU(env.Dir).Since(cpuBefore)
	after, err := scraper.Scrape(ctx)
	if err != nil {
		return err
	}
	res.Attempts = meter.CounterSum(after, harness.ScheduleAttemptsMetric) - meter.CounterSum(before, harness.ScheduleAttemptsMetric)
	apiAfter, err := meter.SampleAPIServer(ctx, env.ControlPlane.Kube)
	if err != nil {
		return err
	}
	res.Writes = meter.WritesOf(apiAfter).Since(meter.WritesOf(apiBefore))
	res.ConsistencyChecks = meter.ConsistencyChecksOf(apiAfter).Since(meter.ConsistencyChecksOf(apiBefore))
	logger.Info("Row measured", "frees", res.Frees, "placed", res.Placed, "attempts", res.Attempts,
		"freedToBoundP99", res.FreedToBound.P99, "longestFitWait", res.FitWait.Longest, "cpu", res.CPU.String())
	// The pods in the unschedulable queue are what kube-scheduler walks on
	// each assigned pod's add and delete.
	logger.Info("Scheduler's queues", "atStart", meter.ValuesBy(before, harness.PendingPodsMetric, "queue"),
		"atEnd", meter.ValuesBy(after, harness.PendingPodsMetric, "queue"))
	// Attempts that placed no pod are retried, with their writes.
	logger.Info("Scheduling attempts by result", "atStart", meter.ValuesBy(before, harness.ScheduleAttemptsMetric, "result"),
		"atEnd", meter.ValuesBy(after, harness.ScheduleAttemptsMetric, "result"))
	for _, w := range res.FitWait.Long {
		logger.Info("A GPU could hold a waiting pod for longer than the target", "node", w.Node,
			"since", w.Since.Format(time.RFC3339Nano), "intoWindow", w.Since.Sub(windowStart).Round(time.Millisecond),
			"for", w.Length.Round(time.Millisecond), "openAtEnd", w.OpenAtEnd)
	}
	return nil
}

// waitTried waits until the scheduler has tried every waiting pod once:
// its active and backoff queues are empty, and at most a hundredth of the
// backlog is gated in its queue but for the pods held (held, called every
// second, says how many the extender's fit gate holds gated, having
// judged them). A fit gate holds the pods that come before its view has
// synced gated, and judges them once it has: until then they are not
// tried. It returns false if limit passed first, or an error if ctx ended
// or check or held reports one.
func waitTried(ctx context.Context, scraper *harness.SchedulerScraper, backlog int, limit time.Duration, check func() error, held func(context.Context) (float64, error)) (bool, error) {
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, context.Cause(ctx)
		case <-tick.C:
		}
		if err := check(); err != nil {
			return false, err
		}
		families, err := scraper.Scrape(ctx)
		if err != nil {
			return false, err
		}
		held, err := held(ctx)
		if err != nil {
			return false, err
		}
		queues := meter.ValuesBy(families, harness.PendingPodsMetric, "queue")
		if len(queues) > 0 && queues["active"]+queues["backoff"] == 0 && queues["gated"]-held <= float64(backlog/100) {
			return true, nil
		}
		if time.Since(start) >= limit {
			return false, nil
		}
	}
}

// watchBacklogBinds feeds the tracker the binds the bench's informers see,
// which must not have started yet.
func watchBacklogBinds(watches *harness.Informers, tracker *backlogTracker, form harness.PodForm, gpusPerNode int) error {
	var binds *backlogBinds
	gpus := watches.Tessera.Gpu().V1alpha1().GPUAllocations().Informer()
	if form == harness.FormClaim {
		claims := watches.Kube.Resource().V1().ResourceClaims()
		binds, gpus = newBacklogBinds(tracker, claimGPUs(claims.Lister(), gpusPerNode)), claims.Informer()
	} else {
		binds = newBacklogBinds(tracker, allocationGPUs(watches.Tessera.Gpu().V1alpha1().GPUAllocations().Lister()))
	}
	if _, err := gpus.AddEventHandler(binds.gpuHandler()); err != nil {
		return err
	}
	_, err := watches.Kube.Core().V1().Pods().Informer().AddEventHandler(binds.podHandler())
	return err
}

// fitGateHeld returns how many pods the row's extender's fit gate holds
// gated (tessera_fit_gate_held_pods), or 0 when it has none.
func fitGateHeld(sched *harness.RowScheduler) func(context.Context) (float64, error) {
	return func(ctx context.Context) (float64, error) {
		if sched.Extender == nil {
			return 0, nil
		}
		families, _, err := meter.ScrapeWith(ctx, http.DefaultClient, sched.Extender.URL+"/metrics")
		if err != nil {
			return 0, err
		}
		held, _ := meter.GaugeValue(families, "tessera_fit_gate_held_pods")
		return held, nil
	}
}

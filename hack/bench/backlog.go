package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// Backlog mode's fixed settings.
const (
	// backlogFactor is how many times what fits the cluster waits.
	backlogFactor = 3
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
	CPU cpuUsage
	// Writes are the write requests kube-apiserver served in the window.
	Writes apiWrites
	// Pinning is where the control plane and the rest ran; nil when shared.
	Pinning *pinning
	// Err is why the row did not finish, if it did not.
	Err error
}

// runBacklog runs each backlog row on a fresh control plane.
func runBacklog(ctx context.Context, r *runner) []BacklogRow {
	var rows []BacklogRow
	for _, row := range allBacklogRows() {
		if !r.o.wants(row) {
			continue
		}
		logger := klog.LoggerWithValues(klog.FromContext(ctx), "row", row)
		res := BacklogRow{Row: row, Name: rowName(row), Pinning: r.pin}
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
func measureBacklog(ctx context.Context, r *runner, row string, res *BacklogRow) error {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer cancel()
	env, err := r.startCluster(ctx, row)
	if err != nil {
		return err
	}
	defer env.stop()

	view, err := newBacklogView(r.o.Nodes, r.o.GPUsPerNode, r.o.Split, DefaultMix())
	if err != nil {
		return err
	}
	tracker := newBacklogTracker(view)
	form := rowForm(row)
	filled, err := fillCluster(ctx, env, view, form, r.o.Workers)
	if err != nil {
		return err
	}
	for i, f := range filled {
		tracker.run(podName(i), f.node, placement.Holds(f.containers))
	}
	res.Filled, res.Backlog = len(filled), backlogFactor*len(filled)
	shapes := DefaultMix().Sequence(res.Backlog)
	for i, s := range shapes {
		tracker.wait(podName(res.Filled+i), view.shapeIndex(s.Name))
	}
	if _, err := createPods(ctx, env, r.o.Workers, shapes, res.Filled, form); err != nil {
		return err
	}

	watches, err := newBenchInformers(env)
	if err != nil {
		return err
	}
	if err := watchBacklogBinds(watches, tracker, form, r.o.GPUsPerNode); err != nil {
		return err
	}
	kubelet, err := watchForKubelet(row, watches, env.cp.Tessera)
	if err != nil {
		return err
	}
	defer func() {
		cancel()
		watches.shutdown()
		wg.Wait()
	}()
	if err := watches.start(ctx); err != nil {
		return err
	}
	kubelet.start(ctx, &wg)

	sched, err := r.prepareScheduler(ctx, env, row)
	if err != nil {
		return err
	}
	defer sched.stopExtender()
	tracker.scan(time.Now())
	start := time.Now()
	if err := sched.start(ctx, env); err != nil {
		return err
	}
	if err := r.pinRow(env); err != nil {
		return err
	}
	scraper, err := newSchedulerScraper(env.cp, sched.proc.Pid())
	if err != nil {
		return err
	}
	if res.Settled, err = waitTried(ctx, scraper, r.o.BacklogWarmup, sched.check); err != nil {
		return err
	}
	res.Warmup = time.Since(start)
	res.WarmupBinds = res.Backlog - tracker.waitingCount()
	logger.Info("Warm-up over", "after", res.Warmup.Round(time.Second), "settled", res.Settled, "bound", res.WarmupBinds)

	before, err := scraper.scrape(ctx)
	if err != nil {
		return err
	}
	writesBefore, err := sampleAPIWrites(ctx, env.cp.Kube)
	if err != nil {
		return err
	}
	cpuBefore := sampleCPU(env.dir)
	windowStart := time.Now()
	tracker.start(windowStart)
	profiles := &profiler{seconds: r.o.ProfileSeconds}
	extenderURL := ""
	if sched.extender != nil {
		extenderURL = sched.extender.url
	}
	profiles.start(ctx, env, extenderURL)
	profiles.startScheduler(ctx, env, scraper, sched.name)
	defer profiles.wait()
	finish := deletePodAndAllocation(env.cp.Kube, env.cp.Tessera)
	if form == formClaim {
		finish = deletePodAndDeallocate(env.cp.Kube)
	}
	rng := rand.New(rand.NewPCG(uint64(r.o.Nodes), uint64(res.Filled)))
	ended, err := finishPods(ctx, tracker, r.o.FinishRate, r.o.BacklogDuration, rng, finish)
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
	res.CPU = sampleCPU(env.dir).since(cpuBefore)
	after, err := scraper.scrape(ctx)
	if err != nil {
		return err
	}
	res.Attempts = counterSum(after, scheduleAttemptsMetric) - counterSum(before, scheduleAttemptsMetric)
	writesAfter, err := sampleAPIWrites(ctx, env.cp.Kube)
	if err != nil {
		return err
	}
	res.Writes = writesAfter.since(writesBefore)
	logger.Info("Row measured", "frees", res.Frees, "placed", res.Placed, "attempts", res.Attempts,
		"freedToBoundP99", res.FreedToBound.P99, "longestFitWait", res.FitWait.Longest, "cpu", res.CPU.String())
	return sched.check()
}

// waitTried waits until the scheduler has tried every waiting pod once:
// its active and backoff queues are empty. It returns false if limit
// passed first, or an error if ctx ended or check, called every second,
// reports one.
func waitTried(ctx context.Context, scraper *schedulerScraper, limit time.Duration, check func() error) (bool, error) {
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
		families, err := scraper.scrape(ctx)
		if err != nil {
			return false, err
		}
		queues := valuesBy(families, pendingPodsMetric, "queue")
		if len(queues) > 0 && queues["active"]+queues["backoff"] == 0 {
			return true, nil
		}
		if time.Since(start) >= limit {
			return false, nil
		}
	}
}

// watchBacklogBinds feeds the tracker the binds the bench's informers see,
// which must not have started yet.
func watchBacklogBinds(watches *benchInformers, tracker *backlogTracker, form podForm, gpusPerNode int) error {
	var binds *backlogBinds
	gpus := watches.tessera.Gpu().V1alpha1().GPUAllocations().Informer()
	if form == formClaim {
		claims := watches.kube.Resource().V1().ResourceClaims()
		binds, gpus = newBacklogBinds(tracker, claimGPUs(claims.Lister(), gpusPerNode)), claims.Informer()
	} else {
		binds = newBacklogBinds(tracker, allocationGPUs(watches.tessera.Gpu().V1alpha1().GPUAllocations().Lister()))
	}
	if _, err := gpus.AddEventHandler(binds.gpuHandler()); err != nil {
		return err
	}
	_, err := watches.kube.Core().V1().Pods().Informer().AddEventHandler(binds.podHandler())
	return err
}

package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
)

// runRow runs one row on a fresh control plane. A row that fails says why
// in its Err, with what it measured until then.
func runRow(ctx context.Context, r *runner, row string) RowResult {
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "row", row)
	ctx = klog.NewContext(ctx, logger)
	res := RowResult{Row: row, Name: rowName(row), Pods: r.o.Pods, APIRequests: -1, Pinning: r.pin}
	if hasExtender(row) {
		res.APIRequests = 0
	}
	res.Err = measureRow(ctx, r, row, &res)
	if res.Err != nil {
		logger.Error(res.Err, "Row failed")
	}
	return res
}

func measureRow(ctx context.Context, r *runner, row string, res *RowResult) error {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	// Everything the row started in the background ends before the control plane.
	defer cancel()
	env, err := r.startCluster(ctx, row)
	if err != nil {
		return err
	}
	defer env.stop()
	created, err := createPods(ctx, env, r.o.Workers, DefaultMix().Sequence(r.o.Pods), 0, rowForm(row))
	if err != nil {
		return err
	}

	binds := newBindRecorder(r.o.Pods)
	watches, err := newBenchInformers(env)
	if err != nil {
		return err
	}
	pods := watches.kube.Core().V1().Pods()
	if _, err := pods.Informer().AddEventHandler(binds.handler()); err != nil {
		return err
	}
	kubelet, err := watchForKubelet(row, watches, env.cp.Tessera)
	if err != nil {
		return err
	}
	// Informers and workers end with ctx, and before the control plane.
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
	noop, extender := sched.noop, sched.extender

	writesBefore, err := sampleAPIWrites(ctx, env.cp.Kube)
	if err != nil {
		return err
	}
	cpuBefore := sampleCPU(env.dir)
	start := time.Now()
	if err := sched.start(ctx, env); err != nil {
		return err
	}
	if err := r.pinRow(env); err != nil {
		return err
	}
	profiles := &profiler{seconds: r.o.ProfileSeconds}
	var extenderURL string
	if extender != nil {
		extenderURL = extender.url
	}
	profiles.start(ctx, env, extenderURL)
	defer profiles.wait()
	waitErr := waitAllBound(ctx, binds, r.o.Timeout, sched.check)

	res.CPU = sampleCPU(env.dir).since(cpuBefore)
	bound, last, latencies := binds.snapshot(created, start)
	res.Bound = bound
	if bound > 0 {
		res.Duration = last.Sub(start)
	}
	res.Latency = sampleQuantiles(latencies)
	_, _, rawLatencies := binds.snapshot(created, time.Time{})
	rawQ := sampleQuantiles(rawLatencies)
	logger.Info("Row measured", "bound", bound, "pods", r.o.Pods, "duration", res.Duration.Round(time.Millisecond),
		"podsPerSecond", fmt.Sprintf("%.1f", res.Throughput()),
		"createToBoundP50", rawQ.P50.Round(time.Millisecond), "createToBoundP99", rawQ.P99.Round(time.Millisecond))
	logger.Info("CPU time used during the row", "cpu", res.CPU.String())
	if kubelet != nil {
		logger.Info("Allocations completed by the simulated kubelet", "count", kubelet.completed.Load())
	}

	// A bind is observed in the histogram just after the pod is bound, so
	// the last ones may not be in it yet when the watch reports the bind.
	verbs := func() (map[string]Quantiles, error) { return nil, nil }
	switch {
	case noop != nil:
		verbs = noop.quantiles
	case extender != nil:
		verbs = func() (map[string]Quantiles, error) {
			families, err := scrape(ctx, extender.url+"/metrics")
			if err != nil {
				return nil, err
			}
			res.BindQueueWait = histogramOf(families, bindQueueWaitMetric)
			return verbQuantiles(families, extenderDurationMetric), nil
		}
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		if res.Verbs, err = verbs(); err != nil {
			return err
		}
		if res.Verbs == nil || res.Verbs[verbBind].Count >= uint64(bound) || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if extender != nil {
		if _, res.PeakRSSBytes, err = extender.Memory(); err != nil {
			return err
		}
	}
	writesAfter, err := sampleAPIWrites(ctx, env.cp.Kube)
	if err != nil {
		return err
	}
	res.Writes = writesAfter.since(writesBefore)
	logger.Info("API writes while scheduling", "total", res.Writes.total(), "perPod", res.Writes.perPod(max(bound, 1)))
	if hasExtender(row) {
		count, err := countRequestsInFile(env.auditLog, extenderUser)
		if err != nil {
			return err
		}
		res.APIRequests = count.Total
		logger.Info("Extender API requests", "total", count.Total, "byKind", count.String())
	}
	if row == rowTessera {
		cycle, err := auditBindCycle(ctx, r, env, pods.Lister(), kubelet)
		if err != nil {
			return err
		}
		res.Cycle = &cycle
		logger.Info("Bind cycle on a node", "cycle", cycle.String())
	}
	if waitErr != nil {
		return fmt.Errorf("%d of %d pods bound: %w (logs in %s)", bound, r.o.Pods, waitErr, env.dir)
	}
	return nil
}

// bindCycle times the steps of Tessera's binds from the audit log, the
// pods' nodes and the simulated kubelet's records.
func auditBindCycle(ctx context.Context, r *runner, env *clusterEnv, pods corelisters.PodLister, kubelet *kubeletSim) (BindCycle, error) {
	timelines := map[string]*podTimeline{}
	list, err := pods.List(labels.Everything())
	if err != nil {
		return BindCycle{}, err
	}
	for _, p := range list {
		timelines[p.Name] = &podTimeline{node: p.Spec.NodeName}
	}
	for name, at := range kubelet.allocated() {
		if p, ok := timelines[name]; ok {
			p.allocated = at
		}
	}
	if err := timelinesFromAudit(env.auditLog, extenderUser, timelines); err != nil {
		return BindCycle{}, err
	}
	return bindCycle(timelines), nil
}

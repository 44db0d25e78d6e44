package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// ScaleDRAResult is what scale mode measured of DRA mode: kube-scheduler
// starting over --pods allocated claims, scheduling --new-pods more, and
// the node daemons' steady state with and without claims churning.
type ScaleDRAResult struct {
	Nodes, GPUsPerNode, Pods, NewPods int
	// LoadAtStart is the load average before the bench created anything;
	// Load when kube-scheduler started, after the bench's own writes.
	LoadAtStart, Load string
	// QuietAfter is how long kube-scheduler's start waited for the
	// control plane to settle from the bench's writes; Quiet is whether it
	// had by then.
	QuietAfter time.Duration
	Quiet      bool
	// SyncTime is from kube-scheduler's start to its /readyz answering ok,
	// which waits for its informers to sync.
	SyncTime time.Duration
	// RSSAfterSync and PeakAfterSync are its memory 2 s after it was ready;
	// PeakAfterBatch its peak after scheduling the new pods.
	RSSAfterSync, PeakAfterSync, PeakAfterBatch int64
	// Bound is how many new pods were bound; Duration from the first new
	// pod's creation to the last bind; Latency each pod's creation to bind.
	Bound    int
	Duration time.Duration
	Latency  Quantiles
	// CPU and Writes are every process's CPU time and the API writes over
	// that time.
	CPU    cpuUsage
	Writes apiWrites
	// Steady are the node daemons' windows, in the order measured, each
	// Window long; Period is each daemon's Lease period.
	Steady         []SteadyWindow
	Window, Period time.Duration
	// Pinning is where the control plane and the rest ran; nil when shared.
	Pinning *pinning
}

// runScaleDRA places --pods pods with their claims allocated, starts
// kube-scheduler over them, schedules --new-pods more and measures the
// node daemons' steady state.
func runScaleDRA(ctx context.Context, r *runner) (*ScaleDRAResult, error) {
	logger := klog.FromContext(ctx)
	o := r.o
	res := &ScaleDRAResult{Nodes: o.Nodes, GPUsPerNode: o.GPUsPerNode, Pods: o.Pods, NewPods: o.NewPods,
		LoadAtStart: loadAverage(), Pinning: r.pin, Window: o.SteadyWindow, Period: o.HeartbeatPeriod}
	env, err := r.startCluster(ctx, rowDRA)
	if err != nil {
		return nil, err
	}
	defer env.stop()
	if err := placePods(ctx, env, o, formClaim); err != nil {
		return nil, err
	}
	sched, err := r.prepareScheduler(ctx, env, rowDRA)
	if err != nil {
		return nil, err
	}
	// kube-scheduler's start is timed on a control plane done with the
	// bench's writes, as the extender's probes are.
	if res.QuietAfter, res.Quiet, err = settled.wait(ctx, env.dir); err != nil {
		return nil, err
	}
	res.Load = loadAverage()
	started := time.Now()
	if err := sched.start(ctx, env); err != nil {
		return nil, err
	}
	res.SyncTime = time.Since(started)
	if err := r.pinRow(env); err != nil {
		return nil, err
	}
	logger.Info("kube-scheduler ready", "after", res.SyncTime.Round(time.Millisecond), "load", res.Load)
	select {
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-time.After(2 * time.Second):
	}
	if res.RSSAfterSync, res.PeakAfterSync, err = procMemory(sched.proc.Pid()); err != nil {
		return nil, err
	}
	if err := scheduleNewPods(ctx, r, env, sched, res); err != nil {
		return nil, err
	}
	if _, res.PeakAfterBatch, err = procMemory(sched.proc.Pid()); err != nil {
		return nil, err
	}
	if res.Steady, err = measureSteady(ctx, r, env); err != nil {
		return nil, err
	}
	return res, sched.check()
}

// scheduleNewPods creates --new-pods DRA pods, each after its claim, and
// times kube-scheduler binding them onto the room the placed pods left.
func scheduleNewPods(ctx context.Context, r *runner, env *clusterEnv, sched *rowScheduler, res *ScaleDRAResult) error {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithCancel(ctx)
	binds := newBindRecorder(r.o.NewPods)
	watches, err := newBenchInformers(env)
	if err != nil {
		cancel()
		return err
	}
	defer func() {
		cancel()
		watches.shutdown()
	}()
	first := podName(r.o.Pods)
	if _, err := watches.kube.Core().V1().Pods().Informer().AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool { p, ok := obj.(*corev1.Pod); return ok && p.Name >= first },
		Handler:    binds.handler(),
	}); err != nil {
		return err
	}
	if err := watches.start(ctx); err != nil {
		return err
	}
	scraper, err := newSchedulerScraper(env.cp, sched.proc.Pid())
	if err != nil {
		return err
	}
	writesBefore, err := sampleAPIWrites(ctx, env.cp.Kube)
	if err != nil {
		return err
	}
	cpuBefore, start := sampleCPU(env.dir), time.Now()
	profiles := &profiler{seconds: r.o.ProfileSeconds}
	profiles.start(ctx, env, "")
	profiles.startScheduler(ctx, env, scraper, sched.name)
	defer profiles.wait()
	created, err := createPods(ctx, env, r.o.Workers, DefaultMix().Sequence(r.o.NewPods), r.o.Pods, formClaim)
	if err != nil {
		return err
	}
	waitErr := waitAllBound(ctx, binds, r.o.Timeout, sched.check)
	res.CPU = sampleCPU(env.dir).since(cpuBefore)
	bound, last, latencies := binds.snapshot(created, time.Time{})
	res.Bound, res.Latency = bound, sampleQuantiles(latencies)
	if bound > 0 {
		res.Duration = last.Sub(start)
	}
	writesAfter, err := sampleAPIWrites(ctx, env.cp.Kube)
	if err != nil {
		return err
	}
	res.Writes = writesAfter.since(writesBefore)
	logger.Info("New DRA pods scheduled", "bound", bound, "pods", r.o.NewPods, "duration", res.Duration.Round(time.Millisecond), "cpu", res.CPU.String())
	if waitErr != nil {
		return fmt.Errorf("%d of %d new pods bound: %w (logs in %s)", bound, r.o.NewPods, waitErr, env.dir)
	}
	return nil
}

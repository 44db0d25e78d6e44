// Package scaledra is the bench's scale mode for DRA (--rows=e):
// kube-scheduler with many claims allocated, and the node daemons' steady
// state while claims churn.
package scaledra

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
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
	Latency  meter.Quantiles
	// CPU and Writes are every process's CPU time and the API writes over
	// that time.
	CPU    meter.CPUUsage
	Writes meter.APIWrites
	// Steady are the node daemons' windows, in the order measured, each
	// Window long; Period is each daemon's Lease period.
	Steady         []SteadyWindow
	Window, Period time.Duration
	// Pinning is where the control plane and the rest ran; nil when shared.
	Pinning *harness.Pinning
}

// Run places --pods pods with their claims allocated, starts
// kube-scheduler over them, schedules --new-pods more and measures the
// node daemons' steady state.
func Run(ctx context.Context, r *harness.Runner) (*ScaleDRAResult, error) {
	logger := klog.FromContext(ctx)
	o := r.Options
	res := &ScaleDRAResult{Nodes: o.Nodes, GPUsPerNode: o.GPUsPerNode, Pods: o.Pods, NewPods: o.NewPods,
		LoadAtStart: meter.LoadAverage(), Pinning: r.Pin, Window: o.SteadyWindow, Period: o.HeartbeatPeriod}
	env, err := r.StartCluster(ctx, harness.RowDRA)
	if err != nil {
		return nil, err
	}
	defer env.Stop()
	if err := harness.PlacePods(ctx, env, o, harness.FormClaim); err != nil {
		return nil, err
	}
	sched, err := r.PrepareScheduler(ctx, env, harness.RowDRA)
	if err != nil {
		return nil, err
	}
	// Kube-scheduler's start is timed on a control plane done with the
	// bench's writes, as the extender's probes are.
	if res.QuietAfter, res.Quiet, err = meter.Settled.Wait(ctx, env.Dir); err != nil {
		return nil, err
	}
	res.Load = meter.LoadAverage()
	started := time.Now()
	if err := sched.Start(ctx, env); err != nil {
		return nil, err
	}
	res.SyncTime = time.Since(started)
	if err := r.PinRow(env); err != nil {
		return nil, err
	}
	logger.Info("kube-scheduler ready", "after", res.SyncTime.Round(time.Millisecond), "load", res.Load)
	select {
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-time.After(2 * time.Second):
	}
	if res.RSSAfterSync, res.PeakAfterSync, err = harness.ProcMemory(sched.Proc.Pid()); err != nil {
		return nil, err
	}
	if err := scheduleNewPods(ctx, r, env, sched, res); err != nil {
		return nil, err
	}
	if _, res.PeakAfterBatch, err = harness.ProcMemory(sched.Proc.Pid()); err != nil {
		return nil, err
	}
	if res.Steady, err = measureSteady(ctx, r, env); err != nil {
		return nil, err
	}
	return res, sched.Check()
}

// scheduleNewPods creates --new-pods DRA pods, each after its claim, and
// times kube-scheduler binding them onto the room the placed pods left.
func scheduleNewPods(ctx context.Context, r *harness.Runner, env *harness.ClusterEnv, sched *harness.RowScheduler, res *ScaleDRAResult) error {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithCancel(ctx)
	binds := harness.NewBindRecorder(r.Options.NewPods)
	watches, err := harness.NewInformers(env)
	if err != nil {
		cancel()
		return err
	}
	defer func() {
		cancel()
		watches.Shutdown()
	}()
	first := harness.PodName(r.Options.Pods)
	if _, err := watches.Kube.Core().V1().Pods().Informer().AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool { p, ok := obj.(*corev1.Pod); return ok && p.Name >= first },
		Handler:    binds.Handler(),
	}); err != nil {
		return err
	}
	if err := watches.Start(ctx); err != nil {
		return err
	}
	scraper, err := harness.NewSchedulerScraper(env.ControlPlane, sched.Proc.Pid())
	if err != nil {
		return err
	}
	writesBefore, err := meter.SampleAPIWrites(ctx, env.ControlPlane.Kube)
	if err != nil {
		return err
	}
	cpuBefore, start := meter.SampleCPU(env.Dir), time.Now()
	profiles := &harness.Profiler{Seconds: r.Options.ProfileSeconds}
	profiles.Start(ctx, env, "")
	profiles.StartScheduler(ctx, env, scraper, sched.Name)
	defer profiles.Wait()
	created, err := harness.CreatePods(ctx, env, r.Options.Workers, harness.DefaultMix().Sequence(r.Options.NewPods), r.Options.Pods, harness.FormClaim)
	if err != nil {
		return err
	}
	waitErr := harness.WaitAllBound(ctx, binds, r.Options.Timeout, sched.Check)
	res.CPU = meter.SampleCPU(env.Dir).Since(cpuBefore)
	bound, last, latencies := binds.Snapshot(created, time.Time{})
	res.Bound, res.Latency = bound, meter.SampleQuantiles(latencies)
	if bound > 0 {
		res.Duration = last.Sub(start)
	}
	writesAfter, err := meter.SampleAPIWrites(ctx, env.ControlPlane.Kube)
	if err != nil {
		return err
	}
	res.Writes = writesAfter.Since(writesBefore)
	logger.Info("New DRA pods scheduled", "bound", bound, "pods", r.Options.NewPods, "duration", res.Duration.Round(time.Millisecond), "cpu", res.CPU.String())
	if waitErr != nil {
		return fmt.Errorf("%d of %d new pods bound: %w (logs in %s)", bound, r.Options.NewPods, waitErr, env.Dir)
	}
	return nil
}

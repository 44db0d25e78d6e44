package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/test/framework"
)

// QueueRun is one run of queue mode, without or with the gang-fit check.
type QueueRun struct {
	GangFit bool
	queueMeasures
	// Load is the load average before the run.
	Load string
	// Err is why the run did not finish, if it did not.
	Err error
}

// runName names a run, for the logs and the report.
func runName(gangFit bool) string {
	if gangFit {
		return "with gang-fit"
	}
	return "without"
}

// runQueue runs queue mode without the gang-fit check and then with it,
// each on a fresh control plane fragmented alike.
func runQueue(ctx context.Context, r *runner) []QueueRun {
	var runs []QueueRun
	for _, gangFit := range []bool{false, true} {
		logger := klog.LoggerWithValues(klog.FromContext(ctx), "run", runName(gangFit))
		res := QueueRun{GangFit: gangFit, Load: loadAverage()}
		res.Err = measureQueue(klog.NewContext(ctx, logger), r, gangFit, &res)
		if res.Err != nil {
			logger.Error(res.Err, "Run failed")
		}
		runs = append(runs, res)
		if ctx.Err() != nil {
			break
		}
	}
	return runs
}

// measureQueue fragments a fresh cluster, starts Kueue, Tessera's
// extender (serving the gang-fit check when gangFit) and kube-scheduler,
// submits every Job at once and follows them until all are done, nothing
// progresses for --stall, or --timeout passes.
func measureQueue(ctx context.Context, r *runner, gangFit bool, res *QueueRun) error {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer cancel()
	f := newFragments(r.o.Nodes, r.o.GPUsPerNode, r.o.Queue.Seed)
	env, sched, err := startQueueCluster(ctx, r, f, gangFit)
	if err != nil {
		return err
	}
	defer env.stop()
	defer sched.stopExtender()

	watches, err := newBenchInformers(env)
	if err != nil {
		return err
	}
	tracker := newQueueTracker(r.o.Queue.PodsPerJob, r.o.Queue.Stall, time.Now())
	work := &jobWork{wg: &wg, kube: env.cp.Kube, tracker: tracker, duration: r.o.Queue.JobDuration}
	queue, err := watchQueue(env, watches, tracker, func(job string) { work.start(ctx, job) })
	if err != nil {
		return err
	}
	kubelet, err := watchForKubelet(rowTessera, watches, env.cp.Tessera)
	if err != nil {
		return err
	}
	defer func() {
		cancel()
		watches.shutdown()
		queue.shutdown()
		wg.Wait()
	}()
	if err := watches.start(ctx); err != nil {
		return err
	}
	if err := queue.start(ctx); err != nil {
		return err
	}
	kubelet.start(ctx, &wg)

	start := time.Now()
	if err := submitJobs(ctx, env, tracker, r.o.Queue, r.o.Workers); err != nil {
		return err
	}
	followErr := followQueue(ctx, tracker, r.o.Timeout, sched.check)
	res.queueMeasures = tracker.measures(start, time.Now(), f.freeMiB())
	logger.Info("Run measured", "done", res.Done, "jobs", res.Jobs, "toAdmittedP50", res.ToAdmitted.P50, "toRunningP50", res.ToRunning.P50,
		"waited", res.Waited, "deadlock", res.Stall.deadlock(), "memory", res.Memory.String())
	if followErr != nil {
		return fmt.Errorf("%d of %d Jobs done: %w (logs in %s)", res.Done, res.Jobs, followErr, env.dir)
	}
	return sched.check()
}

// startQueueCluster starts a fresh control plane with the controllers
// Jobs need, its nodes fragmented by f, Kueue, the extender (serving the
// gang-fit check when gangFit) and kube-scheduler, and the run's queues.
// The caller stops the extender and the control plane; on error they are
// stopped.
func startQueueCluster(ctx context.Context, r *runner, f fragments, gangFit bool) (*clusterEnv, *rowScheduler, error) {
	dir := filepath.Join(r.base, "queue-"+map[bool]string{false: "without", true: "gangfit"}[gangFit])
	env, err := startEnvWith(ctx, framework.Options{Dir: dir, ControllerManager: true, Workloads: true}, r.extenderConfig.SchedulerName)
	if err != nil {
		return nil, nil, err
	}
	sched, err := setUpQueueCluster(ctx, r, env, f, gangFit)
	if err != nil {
		env.stop()
		return nil, nil, err
	}
	return env, sched, nil
}

func setUpQueueCluster(ctx context.Context, r *runner, env *clusterEnv, f fragments, gangFit bool) (*rowScheduler, error) {
	if err := createNodes(ctx, env, r.o, formSlices); err != nil {
		return nil, err
	}
	if err := fragment(ctx, env, f, r.o.Workers); err != nil {
		return nil, err
	}
	if _, err := env.cp.StartKueueProcess(ctx); err != nil {
		return nil, fmt.Errorf("starting Kueue: %w", err)
	}
	sched, err := startQueueScheduler(ctx, r, env, gangFit)
	if err != nil {
		return nil, err
	}
	if err := r.pinRow(env); err != nil {
		sched.stopExtender()
		return nil, err
	}
	if err := createQueues(ctx, env, f.quota(r.o.Split), gangFit); err != nil {
		sched.stopExtender()
		return nil, err
	}
	return sched, nil
}

// startQueueScheduler starts Tessera's extender, serving the gang-fit
// check when gangFit (--gang-fit, options gangFit.enabled), and
// kube-scheduler calling it.
func startQueueScheduler(ctx context.Context, r *runner, env *clusterEnv, gangFit bool) (*rowScheduler, error) {
	args := slices.Clone(r.o.extenderArgs())
	if gangFit {
		args = append(args, "--gang-fit")
	}
	extender, err := startExtender(ctx, r.extenderBin, env.extenderKubeconfig, r.extenderConfig.SchedulerName, env.dir, args, r.o.ExtenderEnv)
	if err != nil {
		return nil, err
	}
	s := &rowScheduler{name: "kube-scheduler", extender: extender}
	if s.config, err = r.extenderConfig.withExtenderURL(extender.url); err != nil {
		extender.Stop()
		return nil, err
	}
	if err := s.start(ctx, env); err != nil {
		extender.Stop()
		return nil, err
	}
	return s, nil
}

// submitJobs creates every Job at once, --workers at a time, their shapes
// interleaved from queueMix, each timed from just before its create.
func submitJobs(ctx context.Context, env *clusterEnv, tracker *queueTracker, q QueueOptions, workers int) error {
	shapes := queueMix().Sequence(q.Jobs)
	start := time.Now()
	err := forEach(ctx, q.Jobs, workers, func(ctx context.Context, i int) error {
		job, err := queueJob(jobName(i), env.schedulerName, q.PodsPerJob, shapes[i])
		if err != nil {
			return err
		}
		at := time.Now()
		if _, err := env.cp.Kube.BatchV1().Jobs(benchNamespace).Create(ctx, job, metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
			return fmt.Errorf("creating Job %s: %w", job.Name, err)
		}
		tracker.created(job.Name, at)
		return nil
	})
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Submitted Jobs", "jobs", q.Jobs, "podsPerJob", q.PodsPerJob, "duration", time.Since(start).Round(time.Millisecond))
	return nil
}

// followQueue samples the tracker every second until every Job is done
// or a stall is declared (both nil), the timeout passes, ctx ends, or
// check reports the scheduler gone.
func followQueue(ctx context.Context, tracker *queueTracker, timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-tick.C:
		}
		if err := check(); err != nil {
			return err
		}
		now := time.Now()
		done, stall := tracker.sample(now)
		if done {
			return nil
		}
		if stall != nil {
			klog.FromContext(ctx).Info("Nothing progresses", "deadlock", stall.deadlock(), "admittedWithPodsPending", stall.jobs,
				"pendingPods", stall.pending, "heldMiB", stall.heldMiB, "notAdmitted", stall.unadmitted, "since", stall.since)
			return nil
		}
		if now.After(deadline) {
			return fmt.Errorf("--timeout=%s passed", timeout)
		}
	}
}

// queueTable runs queue mode and reports it.
func queueTable(ctx context.Context, r *runner, where string) QueueTable {
	q := r.o.Queue
	f := newFragments(r.o.Nodes, r.o.GPUsPerNode, q.Seed)
	quota := f.quota(r.o.Split)
	var written []string
	for _, name := range gpurequest.QuotaResources {
		v := quota[name]
		written = append(written, fmt.Sprintf("%s %d", name, v.Value()))
	}
	return QueueTable{
		Title: fmt.Sprintf("Queue: %d Jobs × %d pods (%s) through Kueue onto %d nodes × %d GPUs (split %d) fragmented by earlier pods; a Job works %s once all its pods run; %s",
			q.Jobs, q.PodsPerJob, queueMix(), r.o.Nodes, r.o.GPUsPerNode, r.o.Split, q.JobDuration, where),
		Setup: []string{
			fmt.Sprintf("fragments (--seed=%d, the same in both runs): %s; %d GiB free in all", q.Seed, f, f.freeMiB()/1024),
			fmt.Sprintf("ClusterQueue %s's nominal quota: %s; deadlock: admitted Jobs with pods Pending while nothing is admitted, placed or done for --stall=%s",
				clusterQueue, strings.Join(written, ", "), q.Stall),
		},
		Runs: runQueue(ctx, r),
	}
}

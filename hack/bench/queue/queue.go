// Package queue is the bench's queue mode: Jobs through Kueue onto a
// fragmented cluster, without and with Tessera's gang-fit admission check.
package queue

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
	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
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
func runQueue(ctx context.Context, r *harness.Runner) []QueueRun {
	var runs []QueueRun
	for _, gangFit := range []bool{false, true} {
		logger := klog.LoggerWithValues(klog.FromContext(ctx), "run", runName(gangFit))
		res := QueueRun{GangFit: gangFit, Load: meter.LoadAverage()}
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
func measureQueue(ctx context.Context, r *harness.Runner, gangFit bool, res *QueueRun) error {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer cancel()
	f := newFragments(r.Options.Nodes, r.Options.GPUsPerNode, r.Options.Queue.Seed)
	env, sched, err := startQueueCluster(ctx, r, f, gangFit)
	if err != nil {
		return err
	}
	defer env.Stop()
	defer sched.StopExtender()

	watches, err := harness.NewInformers(env)
	if err != nil {
		return err
	}
	tracker := newQueueTracker(r.Options.Queue.PodsPerJob, r.Options.Queue.Stall, time.Now())
	work := &jobWork{wg: &wg, kube: env.ControlPlane.Kube, tracker: tracker, duration: r.Options.Queue.JobDuration}
	queue, err := watchQueue(env, watches, tracker, func(job string) { work.start(ctx, job) })
	if err != nil {
		return err
	}
	kubelet, err := harness.WatchForKubelet(harness.RowTessera, watches, env.ControlPlane.Tessera)
	if err != nil {
		return err
	}
	defer func() {
		cancel()
		watches.Shutdown()
		queue.shutdown()
		wg.Wait()
	}()
	if err := watches.Start(ctx); err != nil {
		return err
	}
	if err := queue.start(ctx); err != nil {
		return err
	}
	kubelet.Start(ctx, &wg)

	start := time.Now()
	if err := submitJobs(ctx, env, tracker, r.Options.Queue, r.Options.Workers); err != nil {
		return err
	}
	followErr := followQueue(ctx, tracker, r.Options.Timeout, sched.Check)
	res.queueMeasures = tracker.measures(start, time.Now(), f.freeMiB(), gangFit)
	logger.Info("Run measured", "done", res.Done, "jobs", res.Jobs, "toAdmittedP50", res.ToAdmitted.P50, "toRunningP50", res.ToRunning.P50,
		"waited", res.Waited, "deadlock", res.Stall.deadlock(), "memory", res.Memory.String())
	if followErr != nil {
		return fmt.Errorf("%d of %d Jobs done: %w (logs in %s)", res.Done, res.Jobs, followErr, env.Dir)
	}
	return sched.Check()
}

// startQueueCluster starts a fresh control plane with the controllers
// Jobs need, its nodes fragmented by f, Kueue, the extender (serving the
// gang-fit check when gangFit) and kube-scheduler, and the run's queues.
// The caller stops the extender and the control plane; on error they are
// stopped.
func startQueueCluster(ctx context.Context, r *harness.Runner, f fragments, gangFit bool) (*harness.ClusterEnv, *harness.RowScheduler, error) {
	dir := filepath.Join(r.Base, "queue-"+map[bool]string{false: "without", true: "gangfit"}[gangFit])
	env, err := harness.StartEnvWith(ctx, framework.Options{Dir: dir, ControllerManager: true, Workloads: true}, r.ExtenderConfig.SchedulerName)
	if err != nil {
		return nil, nil, err
	}
	sched, err := setUpQueueCluster(ctx, r, env, f, gangFit)
	if err != nil {
		env.Stop()
		return nil, nil, err
	}
	return env, sched, nil
}

func setUpQueueCluster(ctx context.Context, r *harness.Runner, env *harness.ClusterEnv, f fragments, gangFit bool) (*harness.RowScheduler, error) {
	if err := harness.CreateNodes(ctx, env, r.Options, harness.FormSlices); err != nil {
		return nil, err
	}
	if err := fragment(ctx, env, f, r.Options.Workers); err != nil {
		return nil, err
	}
	if _, err := env.ControlPlane.StartKueueProcess(ctx); err != nil {
		return nil, fmt.Errorf("starting Kueue: %w", err)
	}
	sched, err := startQueueScheduler(ctx, r, env, gangFit)
	if err != nil {
		return nil, err
	}
	if err := r.PinRow(env); err != nil {
		sched.StopExtender()
		return nil, err
	}
	if err := createQueues(ctx, env, f.quota(r.Options.Split), gangFit); err != nil {
		sched.StopExtender()
		return nil, err
	}
	return sched, nil
}

// startQueueScheduler starts Tessera's extender, serving the gang-fit
// check when gangFit (--gang-fit, options gangFit.enabled), and
// kube-scheduler calling it.
func startQueueScheduler(ctx context.Context, r *harness.Runner, env *harness.ClusterEnv, gangFit bool) (*harness.RowScheduler, error) {
	args := slices.Clone(r.Options.ExtenderFlags())
	if gangFit {
		args = append(args, "--gang-fit")
	}
	extender, err := harness.StartExtender(ctx, r.ExtenderBin, env.ExtenderKubeconfig, r.ExtenderConfig.SchedulerName, env.Dir, args, r.Options.ExtenderEnv)
	if err != nil {
		return nil, err
	}
	s := &harness.RowScheduler{Name: "kube-scheduler", Extender: extender}
	if s.Config, err = r.ExtenderConfig.WithExtenderURL(extender.URL); err != nil {
		extender.Stop()
		return nil, err
	}
	if err := s.Start(ctx, env); err != nil {
		extender.Stop()
		return nil, err
	}
	return s, nil
}

// submitJobs creates every Job at once, --workers at a time, their shapes
// interleaved from queueMix, each timed from just before its create.
func submitJobs(ctx context.Context, env *harness.ClusterEnv, tracker *queueTracker, q harness.QueueOptions, workers int) error {
	shapes := queueMix().Sequence(q.Jobs)
	start := time.Now()
	err := harness.ForEach(ctx, q.Jobs, workers, func(ctx context.Context, i int) error {
		job, err := queueJob(jobName(i), env.SchedulerName, q.PodsPerJob, shapes[i])
		if err != nil {
			return err
		}
		at := time.Now()
		if _, err := env.ControlPlane.Kube.BatchV1().Jobs(harness.Namespace).Create(ctx, job, metav1.CreateOptions{FieldManager: harness.FieldManager}); err != nil {
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

// Run runs queue mode and reports it.
func Run(ctx context.Context, r *harness.Runner) QueueTable {
	q := r.Options.Queue
	f := newFragments(r.Options.Nodes, r.Options.GPUsPerNode, q.Seed)
	quota := f.quota(r.Options.Split)
	var written []string
	for _, name := range gpurequest.QuotaResources {
		v := quota[name]
		written = append(written, fmt.Sprintf("%s %d", name, v.Value()))
	}
	return QueueTable{
		Title: fmt.Sprintf("Queue: %d Jobs × %d pods (%s) through Kueue onto %d nodes × %d GPUs (split %d) fragmented by earlier pods; a Job works %s once all its pods run; %s",
			q.Jobs, q.PodsPerJob, queueMix(), r.Options.Nodes, r.Options.GPUsPerNode, r.Options.Split, q.JobDuration, r.Where()),
		Setup: []string{
			fmt.Sprintf("fragments (--seed=%d, the same in both runs): %s; %d GiB free in all", q.Seed, f, f.freeMiB()/1024),
			fmt.Sprintf("ClusterQueue %s's nominal quota: %s; deadlock: admitted Jobs with pods Pending while nothing is admitted, placed or done for --stall=%s",
				clusterQueue, strings.Join(written, ", "), q.Stall),
		},
		Runs: runQueue(ctx, r),
	}
}

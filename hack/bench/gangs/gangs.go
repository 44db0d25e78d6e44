// Package gangs is the bench's gangs mode: GPU slices in gangs of each
// size asked for, each gang a PodGroup whose minCount is its size, placed
// all or nothing by tessera-scheduler with Kubernetes' Workload API on,
// and the same pods without a PodGroup; each row on a fresh control plane.
package gangs

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

// Run runs a row per gang size, then the same pods without a PodGroup,
// and reports them.
func Run(ctx context.Context, r *harness.Runner) Table {
	o := r.Options
	t := Table{Title: fmt.Sprintf("%d nodes × %d GPUs (split %d), %d pods of %s, tessera-scheduler with the Workload API on; %s",
		o.Nodes, o.GPUsPerNode, o.Split, o.Pods, slice.Name, r.Where())}
	for _, size := range append(slices.Clone(o.Gangs.Sizes), 0) {
		t.Rows = append(t.Rows, runRow(ctx, r, size))
		if ctx.Err() != nil {
			break
		}
	}
	return t
}

// runRow runs one row on a fresh control plane of its own. A row that
// fails says why in its Err, with what it measured until then.
func runRow(ctx context.Context, r *harness.Runner, size int) Result {
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "gangSize", size)
	ctx = klog.NewContext(ctx, logger)
	res := Result{Size: size, Pods: r.Options.Pods, Load: meter.LoadAverage()}
	row := *r
	row.Base = filepath.Join(r.Base, fmt.Sprintf("gangs-of-%d", size))
	res.Err = measure(ctx, &row, &res)
	if res.Err != nil {
		logger.Error(res.Err, "Row failed")
	}
	return res
}

// measure creates the row's PodGroups and pods, starts tessera-scheduler
// and measures until every pod is bound.
func measure(ctx context.Context, r *harness.Runner, res *Result) error {
	logger := klog.FromContext(ctx)
	binds := harness.NewBindRecorder(res.Pods)
	ctx, c, err := r.StartRowCluster(ctx, harness.RowPlugin, func(ctx context.Context, env *harness.ClusterEnv) error {
		return createGangs(ctx, env, r.Options.Workers, res.Pods, res.Size)
	}, func(watches *harness.Informers) error {
		_, err := watches.Kube.Core().V1().Pods().Informer().AddEventHandler(binds.Handler())
		return err
	})
	if err != nil {
		return err
	}
	defer c.Stop()
	before := meter.SampleCPU(c.Env.Dir)
	start := time.Now()
	if err := c.Sched.Start(ctx, c.Env); err != nil {
		return err
	}
	res.ReadyCPU = meter.SampleCPU(c.Env.Dir).Since(before)[c.Sched.Name]
	if err := r.PinRow(c.Env); err != nil {
		return err
	}
	waitErr := harness.WaitAllBound(ctx, binds, r.Options.Timeout, c.Sched.Check)
	res.SchedulerCPU = meter.SampleCPU(c.Env.Dir).Since(before)[c.Sched.Name]
	res.summarize(binds.Times(), members(res.Pods, res.Size), start)
	logger.Info("Row measured", "bound", res.Bound, "pods", res.Pods, "gangsPlaced", res.Placed, "gangsHalfPlaced", res.Partial,
		"duration", res.Duration.Round(time.Millisecond), "podsPerSecond", fmt.Sprintf("%.1f", res.PodsPerSecond()),
		"schedulerCPU", res.SchedulerCPU, "schedulerCPUUntilReady", res.ReadyCPU)
	if waitErr != nil {
		return fmt.Errorf("%d of %d pods bound: %w (logs in %s)", res.Bound, res.Pods, waitErr, c.Env.Dir)
	}
	return nil
}

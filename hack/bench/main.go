// Command bench measures Tessera's scheduling against the ceilings it is
// built on, on a real control plane (etcd, kube-apiserver, kube-scheduler
// on loopback) with simulated GPU nodes, and prints one table:
//
//	a  kube-scheduler alone (pods ask for whole-GPU counts only)
//	b  kube-scheduler with a no-op extender using the same verbs
//	c  kube-scheduler with Tessera's extender, built from ./scheduler
//	d  tessera-scheduler: kube-scheduler with Tessera's plugin (plugin mode)
//	e  kube-scheduler alone over Tessera's ResourceSlices, the pods asking
//	   through ResourceClaims (DRA mode)
//
// With --pin-control-plane the control plane runs on CPU 0 and the rest
// on the other CPUs.
//
// Each row runs on a fresh control plane. All pods are created first; the
// row is timed from kube-scheduler's start to the last bind. With
// --mode=scale it measures instead the extender's memory and filter
// latency with many pods already placed, with --mode=writes what each
// write of a pod's scheduling costs the control plane, and with
// --mode=backlog how rows c, d and e keep a full cluster busy while pods
// end and thousands wait; --mode=scale --rows=e measures kube-scheduler in
// DRA mode with many claims allocated, and the node daemons' steady state
// while claims churn; --mode=queue sends Jobs through Kueue onto a
// fragmented cluster without and with Tessera's gang-fit admission
// Check. See docs/benchmark.md.
//
//	go run ./hack/bench                      # 1,000 nodes × 8 GPUs, 5,000 pods
//	go run ./hack/bench --mode=scale --nodes=5000 --pods=40000
//	go run ./hack/bench --mode=writes
//	go run ./hack/bench --mode=backlog --nodes=1000
//	go run ./hack/bench --mode=queue --nodes=20 --jobs=30
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tessera-gpu/tessera/hack/bench/backlog"
	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/hack/bench/queue"
	"github.com/tessera-gpu/tessera/hack/bench/rows"
	"github.com/tessera-gpu/tessera/hack/bench/scale"
	"github.com/tessera-gpu/tessera/hack/bench/scaledra"
	"github.com/tessera-gpu/tessera/hack/bench/writes"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/test/framework"
)

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		cancel()
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	o := harness.NewOptions()
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.Complete(fs)
	if err := o.Validate(); err != nil {
		return err
	}
	if err := logsapi.ValidateAndApply(o.Logs, nil); err != nil {
		return fmt.Errorf("configuring logging: %w", err)
	}
	if err := harness.DefaultMix().Validate(o.GPUsPerNode); err != nil {
		return err
	}
	logger := klog.Background().WithName("bench")
	ctx = klog.NewContext(ctx, logger)

	base := o.Dir
	if base == "" {
		dir, err := os.MkdirTemp("", "tessera-bench-")
		if err != nil {
			return err
		}
		defer func() { _ = os.RemoveAll(dir) }()
		base = dir
	} else if err := os.MkdirAll(base, 0o755); err != nil {
		return fmt.Errorf("--dir=%s: %w", base, err)
	}

	configPath := o.SchedulerConfig
	if !filepath.IsAbs(configPath) {
		configPath = filepath.Join(framework.RepoRoot(), configPath)
	}
	config, err := harness.LoadExtenderConfig(configPath)
	if err != nil {
		return err
	}
	logger.Info("Scheduler configuration for the extender rows", "source", config.Source, "schedulerName", config.SchedulerName)

	bin := o.ExtenderBin
	if bin == "" && !o.ScaleDRA() && (o.Mode == harness.ModeScale || o.Wants(harness.RowTessera)) {
		if bin, err = harness.BuildExtender(ctx, base); err != nil {
			return err
		}
	}

	if o.Mode == harness.ModeScale && !o.ScaleDRA() {
		res, err := scale.Run(ctx, o, base, bin, config)
		if err != nil {
			return err
		}
		return emit(out, o.Out, res)
	}
	if o.Mode == harness.ModeWrites {
		res, err := writes.Run(ctx, o, base, config.SchedulerName)
		if err != nil {
			return err
		}
		return emit(out, o.Out, res)
	}

	r := &harness.Runner{Options: o, Base: base, ExtenderConfig: config, ExtenderBin: bin}
	if o.Wants(harness.RowPlugin) {
		if r.SchedulerBin, r.PluginConfig, err = pluginScheduler(o, config.SchedulerName); err != nil {
			return err
		}
		logger.Info("tessera-scheduler for row d", "binary", r.SchedulerBin, "config", r.PluginConfig.Source)
	}
	where := fmt.Sprintf("%d CPUs shared by every process", harness.NumCPU())
	if o.PinControlPlane {
		if r.Pin, err = harness.NewPinning(); err != nil {
			return err
		}
		if err := r.Pin.PinBench(); err != nil {
			return err
		}
		where = r.Pin.String()
	}
	if o.ScaleDRA() {
		res, err := scaledra.Run(ctx, r)
		if err != nil {
			return err
		}
		return emit(out, o.Out, res)
	}
	if o.Mode == harness.ModeQueue {
		table := queue.Run(ctx, r, where)
		if err := emit(out, o.Out, table); err != nil {
			return err
		}
		return table.Failed()
	}
	if o.Mode == harness.ModeBacklog {
		table := backlog.BacklogTable{
			Title: fmt.Sprintf("Backlog: %d nodes × %d GPUs (split %d) filled, %d× as many pods waiting (%s), %g pods ending a second for %s; %s",
				o.Nodes, o.GPUsPerNode, o.Split, backlog.BacklogFactor, harness.DefaultMix(), o.FinishRate, o.BacklogDuration, where),
			Rows: backlog.Run(ctx, r),
		}
		if err := emit(out, o.Out, table); err != nil {
			return err
		}
		return table.Failed()
	}
	table := rows.Table{Title: fmt.Sprintf("%d nodes × %d GPUs (split %d), %d pods: %s; %s",
		o.Nodes, o.GPUsPerNode, o.Split, o.Pods, harness.DefaultMix(), where)}
	var loads []string
	for _, row := range harness.AllRows() {
		if !o.Wants(row) {
			continue
		}
		loads = append(loads, fmt.Sprintf("%s: %s", row, harness.LoadAverage()))
		table.Rows = append(table.Rows, rows.Run(ctx, r, row))
		if ctx.Err() != nil {
			break
		}
	}
	table.Notes = append(table.Notes, "load average (1, 5, 15 min) before each row: "+strings.Join(loads, "; "))
	if err := emit(out, o.Out, table); err != nil {
		return err
	}
	for _, row := range table.Rows {
		if row.Err != nil {
			return fmt.Errorf("row %s did not finish", row.Row)
		}
	}
	return nil
}

// pluginScheduler finds tessera-scheduler and its configuration for row d.
func pluginScheduler(o *harness.Options, schedulerName string) (string, harness.SchedulerConfig, error) {
	bin := o.SchedulerBin
	if bin == "" {
		var err error
		if bin, err = framework.SchedulerPluginBinary(); err != nil {
			return "", harness.SchedulerConfig{}, err
		}
	}
	path := o.PluginConfig
	if !filepath.IsAbs(path) {
		path = filepath.Join(framework.RepoRoot(), path)
	}
	config, err := harness.LoadPluginConfig(path, schedulerName)
	return bin, config, err
}

// report is a table the bench prints.
type report interface {
	WriteText(io.Writer) error
	WriteMarkdown(io.Writer) error
}

// emit prints the report and, if path is set, writes it there in Markdown.
func emit(out io.Writer, path string, r report) error {
	if err := r.WriteText(out); err != nil {
		return err
	}
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--out=%s: %w", path, err)
	}
	if err := r.WriteMarkdown(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("--out=%s: %w", path, err)
	}
	return f.Close()
}

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
// check; --mode=gangs places gangs of GPU slices, each a PodGroup, with
// tessera-scheduler, and the same pods without a PodGroup. See
// docs/benchmark.md.
//
//	go run ./hack/bench                      # 1,000 nodes × 8 GPUs, 5,000 pods
//	go run ./hack/bench --mode=scale --nodes=5000 --pods=40000
//	go run ./hack/bench --mode=writes
//	go run ./hack/bench --mode=backlog --nodes=1000
//	go run ./hack/bench --mode=queue --nodes=20 --jobs=30
//	go run ./hack/bench --mode=gangs --nodes=1000
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/hack/bench/backlog"
	"github.com/tessera-gpu/tessera/hack/bench/gangs"
	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/hack/bench/queue"
	"github.com/tessera-gpu/tessera/hack/bench/rows"
	"github.com/tessera-gpu/tessera/hack/bench/scale"
	"github.com/tessera-gpu/tessera/hack/bench/scaledra"
	"github.com/tessera-gpu/tessera/hack/bench/writes"
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

// run parses the flags, sets up logging and the runner, and runs the mode
// the flags ask for.
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
	ctx = klog.NewContext(ctx, klog.Background().WithName("bench"))
	base, cleanup, err := workDir(o.Dir)
	if err != nil {
		return err
	}
	defer cleanup()
	r, err := harness.NewRunner(ctx, o, base)
	if err != nil {
		return err
	}
	return runMode(ctx, r, out)
}

// runMode runs the mode the flags ask for and prints its table.
func runMode(ctx context.Context, r *harness.Runner, out io.Writer) error {
	o := r.Options
	switch {
	case o.Mode == harness.ModeScale && !o.ScaleDRA():
		res, err := scale.Run(ctx, r)
		return emitResult(out, o.Out, res, err)
	case o.ScaleDRA():
		res, err := scaledra.Run(ctx, r)
		return emitResult(out, o.Out, res, err)
	case o.Mode == harness.ModeWrites:
		res, err := writes.Run(ctx, r)
		return emitResult(out, o.Out, res, err)
	case o.Mode == harness.ModeQueue:
		return emitTable(out, o.Out, queue.Run(ctx, r))
	case o.Mode == harness.ModeBacklog:
		return emitTable(out, o.Out, backlog.Run(ctx, r))
	case o.Mode == harness.ModeGangs:
		return emitTable(out, o.Out, gangs.Run(ctx, r))
	default:
		return emitTable(out, o.Out, rows.Run(ctx, r))
	}
}

// workDir is where the control planes keep their data and logs: dir, or
// a temporary directory that cleanup removes.
func workDir(dir string) (string, func(), error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", nil, fmt.Errorf("--dir=%s: %w", dir, err)
		}
		return dir, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "tessera-bench-")
	if err != nil {
		return "", nil, err
	}
	return tmp, func() { _ = os.RemoveAll(tmp) }, nil
}

// report is a table the bench prints.
type report interface {
	WriteText(io.Writer) error
	WriteMarkdown(io.Writer) error
}

// table is a report of rows that each may have failed.
type table interface {
	report
	Failed() error
}

// emitTable prints the table, then says which of its rows failed, if one did.
func emitTable(out io.Writer, path string, t table) error {
	if err := emit(out, path, t); err != nil {
		return err
	}
	return t.Failed()
}

// emitResult prints what a mode measured, if it finished.
func emitResult(out io.Writer, path string, r report, err error) error {
	if err != nil {
		return err
	}
	return emit(out, path, r)
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

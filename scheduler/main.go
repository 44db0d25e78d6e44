// Command scheduler is Tessera's scheduler extender: kube-scheduler calls it
// to filter, prioritize and bind pods that ask for GPU slices.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/internal/version"
	"github.com/tessera-gpu/tessera/scheduler/app"
	"github.com/tessera-gpu/tessera/scheduler/options"
)

func main() {
	o := options.NewOptions()
	fs := pflag.NewFlagSet(os.Args[0], pflag.ContinueOnError)
	o.AddFlags(fs)
	showVersion := version.AddFlag(fs, "tessera-extender")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == pflag.ErrHelp {
			return
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if showVersion.Printed(os.Stdout) {
		return
	}
	if err := logsapi.ValidateAndApply(o.Logs, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer logs.FlushLogs()
	if err := o.Complete(fs); err != nil {
		klog.Background().Error(err, "Invalid configuration")
		logs.FlushLogs()
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background().WithName("scheduler-extender"))
	if err := app.Run(ctx, o); err != nil {
		klog.FromContext(ctx).Error(err, "Scheduler extender failed")
		logs.FlushLogs()
		os.Exit(1)
	}
}

// Command tessera-device-plugin is Tessera's per-node daemon: it discovers
// the node's GPUs, publishes its GPUNode and answers the kubelet's
// device-plugin calls from the scheduler's GPUAllocations.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/deviceplugin/app"
)

func main() {
	opts, err := app.Parse(os.Args[0], os.Args[1:])
	if errors.Is(err, pflag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if opts.Version.Printed(os.Stdout) {
		return
	}
	if err := logsapi.ValidateAndApply(opts.Logs, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer logs.FlushLogs()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := app.Run(ctx, opts); err != nil {
		klog.Background().Error(err, "Device plugin failed")
		logs.FlushLogs()
		os.Exit(1)
	}
}

// Command scheduler is Tessera's scheduler extender: kube-scheduler calls it
// to filter, prioritize and bind pods that ask for GPU slices.
package main

import (
	"context"
	"os"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/tessera-gpu/tessera/internal/daemon"
	"github.com/tessera-gpu/tessera/scheduler/app"
	"github.com/tessera-gpu/tessera/scheduler/options"
)

func main() {
	o := options.NewOptions()
	daemon.Daemon{
		Program: "tessera-extender",
		Logger:  "scheduler-extender",
		What:    "Scheduler extender",
		AddFlags: func(fs *pflag.FlagSet) *logsapi.LoggingConfiguration {
			o.AddFlags(fs)
			return o.Logs
		},
		Complete: o.Complete,
		Run:      func(ctx context.Context) error { return app.Run(ctx, o) },
	}.Main(os.Args)
}

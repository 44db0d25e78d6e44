// Package daemon runs one of Tessera's daemons from its main: flags,
// --version, logging, configuration checks and signals, alike for each.
package daemon

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

	"github.com/tessera-gpu/tessera/internal/version"
)

// Daemon is what main knows of one daemon.
type Daemon struct {
	// Program names the daemon in --version, such as tessera-webhook.
	Program string
	// Logger names its logger; What says what failed, in the last log line.
	Logger, What string
	// AddFlags adds the daemon's flags and returns its logging options.
	AddFlags func(fs *pflag.FlagSet) *logsapi.LoggingConfiguration
	// Complete checks the parsed configuration and fills in what it implies.
	Complete func(fs *pflag.FlagSet) error
	// Run runs the daemon until ctx ends (SIGINT or SIGTERM).
	Run func(ctx context.Context) error
}

// Main parses args and runs the daemon. It exits the process: 0 after
// --help or --version, 2 for bad flags or configuration, 1 when Run fails.
func (d Daemon) Main(args []string) {
	fs := pflag.NewFlagSet(args[0], pflag.ContinueOnError)
	logging := d.AddFlags(fs)
	showVersion := version.AddFlag(fs, d.Program)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if showVersion.Printed(os.Stdout) {
		return
	}
	if err := logsapi.ValidateAndApply(logging, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer logs.FlushLogs()
	if err := d.Complete(fs); err != nil {
		klog.Background().Error(err, "Invalid configuration")
		logs.FlushLogs()
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background().WithName(d.Logger))
	if err := d.Run(ctx); err != nil {
		klog.FromContext(ctx).Error(err, d.What+" failed")
		logs.FlushLogs()
		os.Exit(1)
	}
}

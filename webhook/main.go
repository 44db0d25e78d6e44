// Command webhook is Tessera's admission webhook: it gives GPU pods a GPU
// count and Tessera's scheduler, and refuses GPU requests no GPU can serve
// with a message that names the container, the field and the limit.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/internal/version"
	"github.com/tessera-gpu/tessera/webhook/app"
)

func main() {
	o := app.NewOptions()
	fs := pflag.NewFlagSet(os.Args[0], pflag.ContinueOnError)
	o.AddFlags(fs)
	showVersion := version.AddFlag(fs, "tessera-webhook")
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
	if err := o.Validate(); err != nil {
		klog.Background().Error(err, "Invalid configuration")
		logs.FlushLogs()
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background().WithName("webhook"))
	if err := run(ctx, o); err != nil {
		klog.FromContext(ctx).Error(err, "Admission webhook failed")
		logs.FlushLogs()
		os.Exit(1)
	}
}

func run(ctx context.Context, o *app.Options) error {
	config, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return fmt.Errorf("loading the client configuration: %w", err)
	}
	deps, err := app.NewDependencies(config)
	if err != nil {
		return err
	}
	server, err := app.NewServer(o, deps)
	if err != nil {
		return err
	}
	return server.Run(ctx)
}

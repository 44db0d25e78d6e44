// Command webhook is Tessera's admission webhook: it gives GPU pods a GPU
// count and Tessera's scheduler, and refuses GPU requests no GPU can serve
// with a message that names the container, the field and the limit.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/tessera-gpu/tessera/internal/daemon"
	"github.com/tessera-gpu/tessera/webhook/app"
)

func main() {
	o := app.NewOptions()
	daemon.Daemon{
		Program: "tessera-webhook",
		Logger:  "webhook",
		What:    "Admission webhook",
		AddFlags: func(fs *pflag.FlagSet) *logsapi.LoggingConfiguration {
			o.AddFlags(fs)
			return o.Logs
		},
		Complete: func(*pflag.FlagSet) error { return o.Validate() },
		Run:      func(ctx context.Context) error { return run(ctx, o) },
	}.Main(os.Args)
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

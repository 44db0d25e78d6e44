// Command localup runs Tessera end to end on one machine: a real control
// plane, Tessera's scheduler extender, webhook and device plugins on
// simulated GPU nodes, sample workloads, and where each landed. It is
// started by hack/local-up.sh, which builds what it needs first.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"
)

func main() {
	var o options
	flag.StringVar(&o.binDir, "bin-dir", "_output/bin", "directory holding the scheduler, webhook and deviceplugin binaries")
	flag.StringVar(&o.stateDir, "state-dir", "_output/local-up", "directory for certificates, data, configuration and logs (emptied at start)")
	flag.StringVar(&o.examples, "examples", "deploy/examples", "directory of pod manifests to apply; empty for none")
	flag.BoolVar(&o.exitAfterDemo, "exit-after-demo", false, "stop everything once the examples are placed instead of waiting for Ctrl-C")
	klog.InitFlags(nil)
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "local-up:", err)
		os.Exit(1)
	}
}

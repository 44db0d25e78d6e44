// Command localup runs Tessera end to end on one machine: a real control
// plane, Tessera's scheduler extender, webhook and device plugins on
// simulated GPU nodes (or, with --mode=dra, tessera-scheduler's
// DynamicResources and node policy score, and the node daemons as DRA
// drivers), sample workloads, and where each landed. It is
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
	flag.StringVar(&o.mode, "mode", modeExtender, "how GPUs are scheduled: extender (kube-scheduler with Tessera's extender, device plugins) or dra (kube-scheduler's DynamicResources allocating the nodes' ResourceSlices, node daemons as DRA drivers)")
	flag.StringVar(&o.examples, "examples", "", "directory of example manifests (pods, and ResourceClaimTemplates in dra mode) to apply (default deploy/examples, or deploy/examples/dra with --mode=dra); \"none\" for none")
	flag.StringVar(&o.scheduler, "scheduler", "", "what schedules: in extender mode extender (kube-scheduler calling the extender, the default) or plugin (tessera-scheduler, kube-scheduler with the Tessera plugin, built by hack/build-scheduler.sh); in DRA mode plugin (tessera-scheduler: DynamicResources with Tessera's node policy score, the default) or stock (kube-scheduler alone, first fit)")
	flag.BoolVar(&o.kueue, "kueue", false, "also run Kueue (built by hack/build-kueue.sh) with two example teams' queues (deploy/examples/kueue): namespaces team-a and team-b, ClusterQueues in one cohort with quotas on Tessera's GPU totals, a LocalQueue each, and an example Job per team")
	flag.BoolVar(&o.exitAfterDemo, "exit-after-demo", false, "stop everything once the examples are placed instead of waiting for Ctrl-C")
	klog.InitFlags(nil)
	flag.Parse()
	if err := o.complete(); err != nil {
		fmt.Fprintln(os.Stderr, "local-up:", err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "local-up:", err)
		os.Exit(1)
	}
}

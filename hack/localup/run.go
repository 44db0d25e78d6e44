package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/test/nodeagent"
)

// options are localup's flags.
type options struct {
	binDir, stateDir, examples, mode string
	// scheduler is what schedules: in extender mode schedulerExtender or
	// schedulerPlugin, in DRA mode schedulerPlugin (tessera-scheduler with
	// its DRA score) or schedulerStock.
	scheduler string
	// kueue also runs Kueue with the example teams' queues.
	kueue         bool
	exitAfterDemo bool
}

// gangExamples is the example gang, a PodGroup and its pods, which the
// cluster serves with --scheduler=plugin.
const gangExamples = "deploy/examples/gangs"

// Modes of the local cluster.
const (
	modeExtender = "extender"
	modeDRA      = "dra"
)

// complete checks the mode and picks its examples.
func (o *options) complete() error {
	switch o.mode {
	case modeExtender, modeDRA:
	default:
		return fmt.Errorf("--mode=%s: want %s or %s", o.mode, modeExtender, modeDRA)
	}
	if err := o.completeScheduler(); err != nil {
		return err
	}
	switch {
	case o.kueue && o.dra():
		// Kueue counts the gpu.tessera.dev totals in containers' requests;
		// in DRA mode GPUs are claims, which these queues do not count.
		return fmt.Errorf("--kueue needs --mode=%s", modeExtender)
	}
	switch {
	case o.examples == "none":
		o.examples = ""
	case o.examples == "" && o.mode == modeDRA:
		o.examples = filepath.Join("deploy", "examples", "dra")
	case o.examples == "":
		o.examples = filepath.Join("deploy", "examples")
	}
	return nil
}

// completeScheduler checks --scheduler against the mode and fills in the
// mode's default: the extender in extender mode, tessera-scheduler in DRA
// mode.
func (o *options) completeScheduler() error {
	want := []string{schedulerExtender, schedulerPlugin}
	if o.dra() {
		want = []string{schedulerPlugin, schedulerStock}
	}
	if o.scheduler == "" {
		o.scheduler = want[0]
	}
	if !slices.Contains(want, o.scheduler) {
		return fmt.Errorf("--scheduler=%s: with --mode=%s want %s or %s", o.scheduler, o.mode, want[0], want[1])
	}
	return nil
}

func (o *options) dra() bool { return o.mode == modeDRA }

// gangs says whether the cluster serves Kubernetes' Workload API: only
// tessera-scheduler with the Tessera plugin keeps its books exact in the
// pod group cycle, where an extender gets no Reserve or Unreserve.
func (o *options) gangs() bool { return o.scheduler == schedulerPlugin && !o.dra() }

// cluster is everything localup started, stopped in reverse order.
type cluster struct {
	o       options
	cp      *framework.ControlPlane
	daemons []*framework.Process
	agents  []*nodeagent.Agent
	metrics []endpoint
	cancel  context.CancelFunc // stops the node agents
	// nodeDaemons are the simulated nodes' device plugins, by node.
	nodeDaemons map[string]*framework.Process
	// sockets holds each node's kubelet socket directories, under a short
	// temporary path rather than the state dir: a Unix socket's path is
	// limited to 107 bytes, which a state dir in a deep clone would pass.
	sockets string
}

// endpoint is a metrics address to show the user.
type endpoint struct{ what, url string }

func run(ctx context.Context, o options) error {
	start := time.Now()
	if err := o.prepareDirs(); err != nil {
		return err
	}
	sockets, err := os.MkdirTemp("", "tessera-")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &cluster{o: o, cancel: cancel, nodeDaemons: map[string]*framework.Process{}, sockets: sockets}
	defer c.stop()

	say("Starting etcd, kube-apiserver and kube-controller-manager")
	// The workload controllers always run: a person's Deployments and Jobs
	// get pods, and PodDisruptionBudgets allow disruptions. With
	// tessera-scheduler the Workload API is on too, so that a PodGroup's
	// pods are placed all or nothing (deploy/examples/gangs).
	cp, err := framework.StartControlPlane(ctx, framework.Options{
		ControllerManager: true, DRA: o.dra(), Workloads: true, Gangs: o.gangs(), Dir: filepath.Join(o.stateDir, "controlplane"),
	})
	c.cp = cp
	if err != nil {
		return err
	}
	if o.kueue {
		say("Starting Kueue and the example teams' queues (%s)", kueueExamples)
		if err := c.startKueue(ctx); err != nil {
			return err
		}
	}
	if o.dra() {
		if o.scheduler == schedulerStock {
			say("Starting stock kube-scheduler (DynamicResources; no extender) and creating the DeviceClass %s", gpuv1alpha1.DRADriverName)
		} else {
			say("Starting tessera-scheduler (DynamicResources and Tessera's node policy score) and creating the DeviceClass %s", gpuv1alpha1.DRADriverName)
		}
		if err := c.startDRAScheduler(ctx); err != nil {
			return err
		}
		say("Starting Tessera's admission webhook in DRA mode (HAMi-style pods become claims)")
	} else {
		if o.scheduler == schedulerPlugin {
			say("Starting tessera-scheduler (kube-scheduler with the Tessera plugin) for GPU pods, and kube-scheduler for the others")
		} else {
			say("Starting Tessera's scheduler extender, the kube-scheduler that calls it for GPU pods, and kube-scheduler for the others")
		}
		if err := c.startScheduler(ctx); err != nil {
			return err
		}
		say("Starting Tessera's admission webhook (self-managed certificates)")
	}
	if err := c.startWebhook(ctx); err != nil {
		return err
	}
	say("Starting %d simulated GPU nodes (%s and node agent each)", len(simNodes()), c.daemonKind())
	if err := c.startNodes(ctx); err != nil {
		return err
	}
	if o.examples != "" {
		say("Applying the example pods in %s", o.examples)
		if err := c.demo(ctx); err != nil {
			return err
		}
	}
	if o.kueue && o.examples != "" {
		say("Submitting the example Jobs in %s to the teams' queues", filepath.Join(kueueExamples, "jobs"))
		if err := c.kueueDemo(ctx, os.Stdout); err != nil {
			return err
		}
	}
	c.printAccess()
	say("Tessera is up (%s)", time.Since(start).Round(time.Second))
	if o.exitAfterDemo {
		return nil
	}
	say("Press Ctrl-C to stop everything")
	<-ctx.Done()
	say("Stopping")
	return nil
}

// prepareDirs makes the state and binary directories absolute, since both
// end up in kubeconfigs and in the daemons' flags, which are read from
// other working directories, and empties the state directory.
func (o *options) prepareDirs() error {
	for _, dir := range []*string{&o.stateDir, &o.binDir} {
		abs, err := filepath.Abs(*dir)
		if err != nil {
			return err
		}
		*dir = abs
	}
	if err := os.RemoveAll(o.stateDir); err != nil {
		return err
	}
	return os.MkdirAll(o.stateDir, 0o755)
}

// daemon starts one of Tessera's binaries, logging into the state dir.
func (c *cluster) daemon(name, bin string, args ...string) (*framework.Process, error) {
	p, err := framework.StartProcess(c.o.stateDir, filepath.Join(c.o.binDir, bin), name, args...)
	if err != nil {
		return nil, err
	}
	c.daemons = append(c.daemons, p)
	return p, nil
}

func (c *cluster) stop() {
	c.cancel()
	for i := len(c.daemons) - 1; i >= 0; i-- {
		c.daemons[i].Stop()
	}
	if c.cp != nil {
		c.cp.Stop()
	}
	_ = os.RemoveAll(c.sockets)
}

func (c *cluster) printAccess() {
	fmt.Println()
	fmt.Println("Use the cluster:")
	fmt.Printf("  export KUBECONFIG=%s\n", c.cp.KubeconfigPath)
	fmt.Println("  kubectl get gpunodes")
	if c.o.dra() {
		fmt.Println("  kubectl get resourceslices,resourceclaims -A")
	} else {
		fmt.Println("  kubectl get gpuallocations -A")
	}
	if c.o.kueue {
		fmt.Println("  kubectl get clusterqueues,localqueues,workloads -A")
	}
	if c.o.gangs() {
		fmt.Printf("  kubectl apply -f %s   # a gang of GPU slices, placed all or nothing\n", gangExamples)
	}
	fmt.Println("  go run ./hack/inventory")
	fmt.Println("Metrics:")
	for _, e := range c.metrics {
		fmt.Printf("  %-28s %s\n", e.what, e.url)
	}
	fmt.Printf("Logs: %s/*.log\n", c.o.stateDir)
}

func say(format string, args ...any) {
	fmt.Printf(">>> "+format+"\n", args...)
}

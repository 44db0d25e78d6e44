package fault

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/clock"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	pluginapp "github.com/tessera-gpu/tessera/deviceplugin/app"
	"github.com/tessera-gpu/tessera/deviceplugin/config"
	"github.com/tessera-gpu/tessera/deviceplugin/plugin"
	"github.com/tessera-gpu/tessera/internal/kubeclient"
	"github.com/tessera-gpu/tessera/scheduler/app"
	"github.com/tessera-gpu/tessera/scheduler/options"
	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/test/nodeagent"
)

// The ways the suite places pods (docs/modes.md).
const (
	// extenderMode is the stock kube-scheduler on the shipped
	// configuration calling the extender.
	extenderMode = "extender"
	// pluginMode is tessera-scheduler, kube-scheduler with Tessera
	// compiled in, on its shipped configuration.
	pluginMode = "plugin"
	// draMode is stock kube-scheduler allocating the claims Tessera's
	// webhook makes of the pods from the GPUs the node daemons publish.
	draMode = "dra"
)

const (
	gpuResource = "nvidia.com/gpu"
	// gpusPerNode simulated L4s (23,034 MiB) on each node, split 4 ways.
	gpusPerNode = 4
	splitCount  = 4
)

// cluster is the suite's cluster; each part runs in process (or, for the
// control plane, as a process of its own) and can be stopped and started
// again.
type cluster struct {
	cp *framework.ControlPlane
	// ctx carries the test's logger to every part.
	ctx  context.Context
	mode string
	// extender runs on extenderAddr in extender mode.
	extender     *component
	extenderAddr string
	// scheduler is tessera-scheduler in plugin mode, run from schedulerBin
	// with schedulerConfig.
	scheduler                     *framework.Process
	schedulerBin, schedulerConfig string
	// daemonBin is the node daemon, run as a process in DRA mode.
	daemonBin string
	nodes     []*simNode
	// configure, if set, changes the extender's configuration, and edits
	// replace strings of tessera-scheduler's shipped one.
	configure func(*options.Config)
	edits     map[string]string
	// agentKube is the node agents' client. Its connections wait for an
	// API server that restarts: a real kubelet's watches back off as
	// client-go's do, which is not Tessera's to measure.
	agentKube kubernetes.Interface
}

// simNode is one simulated GPU node: its kubelet stand-in and node daemon,
// in process as its device plugin or, in DRA mode, a process of its own.
type simNode struct {
	name, dir, gpuFile string
	// The kubelet's directories: device plugins' sockets, DRA plugins'
	// registrations; the DRA plugin's own, which holds its checkpoint;
	// and the runtime's CDI spec directory, which a reboot empties.
	pluginDir, registryDir, draDir, cdiDir string
	// podResources is the kubelet's pod-resources socket.
	podResources        string
	agent               *nodeagent.Agent
	agentRun, pluginRun *component
	daemon              *framework.Process
	daemonRuns          int
}

// component is a part of the cluster running until its context ends.
type component struct {
	what   string
	cancel context.CancelFunc
	done   chan error
}

func run(ctx context.Context, what string, f func(ctx context.Context) error) *component {
	ctx, cancel := context.WithCancel(ctx)
	c := &component{what: what, cancel: cancel, done: make(chan error, 1)}
	go func() { c.done <- f(ctx) }()
	return c
}

// stop ends the component and waits until it has returned.
func (c *component) stop(t *testing.T) {
	t.Helper()
	c.cancel()
	select {
	case err := <-c.done:
		if err != nil {
			t.Errorf("%s: %v", c.what, err)
		}
	case <-time.After(time.Minute):
		t.Errorf("%s did not stop within a minute", c.what)
	}
}

// startCluster starts the control plane, what places pods in the given
// mode and the given number of simulated nodes; t.Cleanup stops them.
func startCluster(t *testing.T, mode string, nodes int) *cluster {
	t.Helper()
	return startClusterWith(t, mode, nodes, setup{})
}

// setup is what a test adds to the suite's cluster.
type setup struct {
	// workloads runs kube-controller-manager's workload controllers.
	workloads bool
	// gangs turns Kubernetes' Workload API (PodGroup) on in every
	// control-plane process and in tessera-scheduler.
	gangs bool
	// prepare runs once the control plane serves, before what places pods.
	prepare func(t *testing.T, cp *framework.ControlPlane)
	// configure and edits are the cluster's.
	configure func(*options.Config)
	edits     map[string]string
}

// startClusterWith is startCluster with what s adds.
func startClusterWith(t *testing.T, mode string, nodes int, s setup) *cluster {
	t.Helper()
	cp := framework.Start(t, framework.Options{ControllerManager: true, DRA: mode == draMode, Workloads: s.workloads, Gangs: s.gangs})
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(1)))
	c := &cluster{cp: cp, ctx: klog.NewContext(context.Background(), logger), mode: mode, configure: s.configure, edits: s.edits}
	if s.prepare != nil {
		s.prepare(t, cp)
	}
	var err error
	if c.agentKube, err = kubernetes.NewForConfig(kubeclient.WaitForRestarts(cp.Config, clock.RealClock{})); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.extender != nil {
			c.extender.stop(t)
		}
	})
	switch mode {
	case extenderMode:
		c.startExtenderMode(t)
	case pluginMode:
		c.startPluginMode(t)
	case draMode:
		c.startDRAMode(t)
	default:
		t.Fatalf("unknown scheduler mode %q", mode)
	}

	for i := range nodes {
		n := c.newNode(t, fmt.Sprintf("fault-%d", i))
		c.nodes = append(c.nodes, n)
		c.startAgent(n)
		c.startDaemon(t, n)
	}
	for _, n := range c.nodes {
		if mode == draMode {
			c.waitSlice(t, n.name)
		} else {
			c.waitNodeReady(t, n.name)
		}
	}
	return c
}

// newNode creates the Node and the simulated node's directories and GPUs.
func (c *cluster) newNode(t *testing.T, name string) *simNode {
	t.Helper()
	framework.CreateReadyNode(c.ctx, t, c.cp.Kube, name, nil)
	// Socket paths must stay short: a temporary directory of its own.
	dir, err := os.MkdirTemp("", "fault-")
	if err != nil {
		t.Fatal(err)
	}
	n := &simNode{name: name, dir: dir, gpuFile: filepath.Join(dir, "gpus.yaml"),
		pluginDir: filepath.Join(dir, "device-plugins"), registryDir: filepath.Join(dir, "registry"),
		draDir: filepath.Join(dir, "plugin"), cdiDir: filepath.Join(dir, "cdi"), podResources: filepath.Join(dir, "pod-resources.sock")}
	// The node stops before its directories go, and before what places
	// pods and the control plane.
	t.Cleanup(func() {
		c.stopDaemon(t, n)
		if n.agentRun != nil {
			n.agentRun.stop(t)
		}
		os.RemoveAll(dir)
	})
	for _, d := range []string{n.pluginDir, n.registryDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gpus := "gpus:\n"
	for g := range gpusPerNode {
		gpus += fmt.Sprintf("- {uuid: GPU-%s-%d, index: %d, model: NVIDIA L4, memoryMiB: 23034, numaNode: 0}\n", name, g, g)
	}
	if err := os.WriteFile(n.gpuFile, []byte(gpus), 0o644); err != nil {
		t.Fatal(err)
	}
	return n
}

// startDaemon runs the node's daemon as the mode serves the kubelet: its
// device plugin in process, or its DRA driver as a process.
func (c *cluster) startDaemon(t *testing.T, n *simNode) {
	t.Helper()
	if c.mode == draMode {
		c.startDRADaemon(t, n)
		return
	}
	c.startPlugin(t, n)
}

// stopDaemon stops the node's daemon, if it was started.
func (c *cluster) stopDaemon(t *testing.T, n *simNode) {
	t.Helper()
	switch {
	case n.daemon != nil:
		if t.Failed() {
			t.Logf("last lines of the node daemon of %s:\n%s", n.name, n.daemon.LogTail(4000))
		}
		n.daemon.Stop()
	case n.pluginRun != nil:
		n.pluginRun.stop(t)
	}
}

// startExtenderMode runs the extender and kube-scheduler on the shipped
// configuration, pointed at the extender.
func (c *cluster) startExtenderMode(t *testing.T) {
	t.Helper()
	addr := framework.FreeAddress(t)
	c.extenderAddr = addr
	c.startExtender(addr)
	framework.WaitReady(t, "the extender", "http://"+addr+"/readyz")
	c.cp.StartShippedScheduler(t, "http://"+addr)
}

// startPluginMode runs tessera-scheduler on the shipped configuration.
func (c *cluster) startPluginMode(t *testing.T) {
	t.Helper()
	bin, err := framework.SchedulerPluginBinary()
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "deploy", "scheduler", "tessera-scheduler-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	config := string(shipped)
	for from, to := range c.edits {
		if !strings.Contains(config, from) {
			t.Fatalf("the shipped tessera-scheduler configuration no longer says %q", from)
		}
		config = strings.ReplaceAll(config, from, to)
	}
	c.schedulerBin, c.schedulerConfig = bin, config
	c.startTesseraScheduler(t)
}

// startTesseraScheduler runs tessera-scheduler until it is killed or the
// control plane stops.
func (c *cluster) startTesseraScheduler(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), framework.SchedulerReadyTimeout)
	defer cancel()
	// -v=2 logs each pod bound, for logPlacerLines.
	p, err := c.cp.StartSchedulerBinaryProcess(ctx, c.schedulerBin, c.schedulerConfig, "-v=2")
	if err != nil {
		t.Fatal(err)
	}
	c.scheduler = p
}

// placer names what places pods in the cluster's mode.
func (c *cluster) placer() string {
	if c.mode == pluginMode {
		return "tessera-scheduler"
	}
	return "extender"
}

// schedulerName is what the suite's pods name as their scheduler: in DRA
// mode kube-scheduler's default profile, otherwise Tessera's.
func (c *cluster) schedulerName() string {
	if c.mode == draMode {
		return ""
	}
	return schedulerName
}

// restartPlacer stops what places pods, as a killed container would be
// (binds in progress cut off), and starts it again after down: the
// extender on its address, or tessera-scheduler with SIGKILL.
func (c *cluster) restartPlacer(t *testing.T, down time.Duration) {
	t.Helper()
	if c.mode == pluginMode {
		c.cp.KillProcess(c.scheduler)
		time.Sleep(down)
		c.startTesseraScheduler(t)
		return
	}
	c.extender.stop(t)
	time.Sleep(down)
	c.startExtender(c.extenderAddr)
}

// startExtender runs the extender with the shipped defaults on addr,
// waiting for the address to be free again after a stop.
func (c *cluster) startExtender(addr string) {
	c.extender = c.serveExtender(addr)
}

// serveExtender runs an extender on addr, as startExtender does.
func (c *cluster) serveExtender(addr string) *component {
	return run(c.ctx, "extender", func(ctx context.Context) error {
		var ln net.Listener
		var err error
		for ctx.Err() == nil {
			if ln, err = net.Listen("tcp", addr); err == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if ln == nil {
			return nil
		}
		cfg := options.NewConfig()
		if c.configure != nil {
			c.configure(cfg)
		}
		if err := cfg.Validate(); err != nil {
			return err
		}
		return app.Serve(ctx, cfg, c.cp.Config, app.Listeners{Extender: ln})
	})
}

// startAgent runs the node's kubelet stand-in; as the kubelet does on
// start, it clears the device-plugin directory and serves kubelet.sock,
// keeping what it checkpointed before. In DRA mode it finds the node's
// driver through the plugin registry.
func (c *cluster) startAgent(n *simNode) {
	if n.agent == nil {
		n.agent = &nodeagent.Agent{NodeName: n.name, PluginDir: n.pluginDir, Kube: c.agentKube}
		if c.mode == draMode {
			n.agent.PluginRegistryDir = n.registryDir
		} else {
			n.agent.DeviceResources = []string{gpuResource}
			n.agent.PodResourcesSocket = n.podResources
		}
	}
	n.agentRun = run(c.ctx, "node agent "+n.name, n.agent.Run)
}

// startPlugin runs the node's device plugin on its simulated GPUs, with
// clients built as the daemon builds them.
func (c *cluster) startPlugin(t *testing.T, n *simNode) {
	t.Helper()
	cfg := config.Default()
	cfg.NodeName = n.name
	cfg.SplitCount = splitCount
	cfg.PluginDir = n.pluginDir
	cfg.PodResourcesSocket = n.podResources
	cfg.SimulatedGPUFile = n.gpuFile
	cfg.MetricsAddress = ""
	deps, err := pluginapp.NewDependencies(c.cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plugin.New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	n.pluginRun = run(c.ctx, "device plugin "+n.name, p.Run)
}

// waitNodeReady waits for the node's GPUNode to be Ready and its GPUs to be
// advertised on the Node.
func (c *cluster) waitNodeReady(t *testing.T, node string) {
	t.Helper()
	framework.WaitFor(t, 2*time.Minute, "node "+node+" to offer GPUs", func() (bool, string) {
		gn, err := c.cp.Tessera.GpuV1alpha1().GPUNodes().Get(c.ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if !meta.IsStatusConditionTrue(gn.Status.Conditions, gpuv1alpha1.GPUNodeReady) {
			return false, fmt.Sprintf("GPUNode conditions %v", gn.Status.Conditions)
		}
		// The device plugin asks the node agent which pod it admits, so
		// the scheduler binds GPU pods to the node at once.
		if c.mode != draMode && gn.Status.PodIdentification != gpuv1alpha1.PodIdentificationPodResources {
			return false, fmt.Sprintf("podIdentification %q", gn.Status.PodIdentification)
		}
		n, err := c.cp.Kube.CoreV1().Nodes().Get(c.ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		q := n.Status.Allocatable[gpuResource]
		return q.Value() > 0, fmt.Sprintf("allocatable %s: %s", gpuResource, q.String())
	})
}

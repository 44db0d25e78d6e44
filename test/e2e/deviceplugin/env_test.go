package deviceplugin

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/config"
	"github.com/tessera-gpu/tessera/deviceplugin/plugin"
	"github.com/tessera-gpu/tessera/scheduler/app"
	"github.com/tessera-gpu/tessera/scheduler/options"
	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/test/nodeagent"
)

const (
	gpuResource = "nvidia.com/gpu"
)

// cluster is a control plane with kube-scheduler, the extender, and
// simulated GPU nodes each served by a device plugin and a node agent.
type cluster struct {
	cp     *framework.ControlPlane
	agents map[string]*nodeagent.Agent
	// extender is the extender's address.
	extender string
	ctx      context.Context
	stops    []chan error
}

// simNode is a node and its simulated GPUs (the simulated-GPU file).
type simNode struct {
	name string
	gpus string
	// dynamicMIG runs its device plugin with dynamicMIG.
	dynamicMIG bool
	// gpuFile is set to the path of the simulated-GPU file.
	gpuFile *string
}

// startCluster starts a cluster with the extender's defaults and a device
// plugin in process on each node.
func startCluster(t *testing.T, nodes ...simNode) *cluster {
	t.Helper()
	c := newCluster(t, options.NewConfig())
	for _, n := range nodes {
		pluginDir, gpuFile := c.addNode(t, n)
		pcfg := config.Default()
		pcfg.NodeName = n.name
		pcfg.SplitCount = 4
		pcfg.PluginDir = pluginDir
		pcfg.PodResourcesSocket = podResourcesSocket(pluginDir)
		pcfg.SimulatedGPUFile = gpuFile
		pcfg.DynamicMIG = n.dynamicMIG
		if n.gpuFile != nil {
			*n.gpuFile = gpuFile
		}
		pcfg.MetricsAddress = ""
		p, err := plugin.New(pcfg, plugin.Dependencies{Kube: c.cp.Kube, Tessera: c.cp.Tessera})
		if err != nil {
			t.Fatal(err)
		}
		c.run(func() error { return p.Run(c.ctx) })
	}
	for _, n := range nodes {
		c.waitNodeReady(t, n.name)
	}
	return c
}

// newCluster starts the control plane, the extender in process with cfg,
// and kube-scheduler on the shipped configuration pointing at it.
func newCluster(t *testing.T, cfg *options.Config) *cluster {
	t.Helper()
	cp := framework.Start(t, framework.Options{ControllerManager: true})
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	c := &cluster{cp: cp, agents: map[string]*nodeagent.Agent{}, ctx: ctx}
	t.Cleanup(func() {
		cancel()
		for _, done := range c.stops {
			if err := <-done; err != nil {
				t.Errorf("stopping: %v", err)
			}
		}
	})

	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	var ls app.Listeners
	for _, ln := range []*net.Listener{&ls.Extender, &ls.Metrics} {
		var err error
		if *ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	c.extender = ls.Extender.Addr().String()
	c.run(func() error { return app.Serve(ctx, cfg, cp.Config, ls) })
	// Ready as the kubelet's probe sees it, on the metrics listener.
	framework.WaitReady(t, "the extender", "http://"+ls.Metrics.Addr().String()+"/readyz")
	cp.StartShippedScheduler(t, "http://"+c.extender)
	return c
}

// run runs f until the test ends.
func (c *cluster) run(f func() error) {
	done := make(chan error, 1)
	c.stops = append(c.stops, done)
	go func() { done <- f() }()
}

// addNode creates the node with its node agent and its simulated-GPU
// file, and returns the kubelet's device-plugin directory and that file.
func (c *cluster) addNode(t *testing.T, n simNode) (pluginDir, gpuFile string) {
	t.Helper()
	framework.CreateReadyNode(c.ctx, t, c.cp.Kube, n.name, nil)
	dir := t.TempDir()
	pluginDir = filepath.Join(dir, "device-plugins")
	if err := os.Mkdir(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	agent := &nodeagent.Agent{NodeName: n.name, PluginDir: pluginDir, PodResourcesSocket: podResourcesSocket(pluginDir), Kube: c.cp.Kube, DeviceResources: []string{gpuResource}}
	c.agents[n.name] = agent
	c.run(func() error { return agent.Run(c.ctx) })
	gpuFile = filepath.Join(dir, "gpus.yaml")
	if err := os.WriteFile(gpuFile, []byte(n.gpus), 0o644); err != nil {
		t.Fatal(err)
	}
	return pluginDir, gpuFile
}

// podResourcesSocket is where a node's agent serves the kubelet's
// pod-resources API, beside its device-plugin directory.
func podResourcesSocket(pluginDir string) string {
	return filepath.Join(filepath.Dir(pluginDir), "pod-resources.sock")
}

// waitNodeReady waits for the node's GPUNode to be Ready and its GPUs to be
// advertised on the Node.
func (c *cluster) waitNodeReady(t *testing.T, node string) {
	t.Helper()
	framework.WaitFor(t, time.Minute, "node "+node+" to offer GPUs", func() (bool, string) {
		gn, err := c.cp.Tessera.GpuV1alpha1().GPUNodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if !meta.IsStatusConditionTrue(gn.Status.Conditions, gpuv1alpha1.GPUNodeReady) {
			return false, fmt.Sprintf("GPUNode conditions %v", gn.Status.Conditions)
		}
		n, err := c.cp.Kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		q := n.Status.Allocatable[gpuResource]
		return q.Value() > 0, fmt.Sprintf("allocatable %s: %s", gpuResource, q.String())
	})
}

// gpuPod is a pod for Tessera's scheduler asking for one GPU with memory.
func gpuPod(name string, memoryMiB int64) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			SchedulerName: "tessera-scheduler",
			Containers: []corev1.Container{{
				Name: "cuda", Image: "cuda",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					gpuResource:         quantity(1),
					"nvidia.com/gpumem": quantity(memoryMiB),
				}},
			}},
		},
	}
}

package dra

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/config"
	"github.com/tessera-gpu/tessera/deviceplugin/plugin"
	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/test/nodeagent"
)

// cluster is a control plane with kube-scheduler (stock, or as
// startClusterWith starts it) and simulated GPU nodes each served by a
// node daemon in DRA mode and a node agent.
type cluster struct {
	t      *testing.T
	ctx    context.Context
	cp     *framework.ControlPlane
	agents map[string]*nodeagent.Agent
	nodes  map[string]*simNode
	// restartScheduler stops tessera-scheduler and starts it again; nil
	// with stock kube-scheduler.
	restartScheduler func()
}

// simNode is a node, its simulated GPUs (the simulated-GPU file) and the
// directories its daemon keeps across restarts.
type simNode struct {
	name    string
	gpus    string
	dir     string
	cdiDir  string
	gpuFile string
	stop    func()
	// dynamicMIG runs the daemon with dynamicMIG: GPUs with a MIG
	// geometry make their instances on demand.
	dynamicMIG bool
	// daemon is the running node daemon.
	daemon *plugin.Plugin
}

// startCluster starts the cluster with stock kube-scheduler.
func startCluster(t *testing.T, nodes ...*simNode) *cluster {
	t.Helper()
	return startClusterWith(t, func(cp *framework.ControlPlane) { cp.StartScheduler(t, framework.StockSchedulerConfig) }, nodes...)
}

// startClusterWith starts the cluster with the scheduler that
// startScheduler starts.
func startClusterWith(t *testing.T, startScheduler func(*framework.ControlPlane), nodes ...*simNode) *cluster {
	t.Helper()
	cp := framework.Start(t, framework.Options{ControllerManager: true, DRA: true})
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	c := &cluster{t: t, ctx: ctx, cp: cp, agents: map[string]*nodeagent.Agent{}, nodes: map[string]*simNode{}}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			n.stop()
		}
		cancel()
	})
	startScheduler(cp)
	if _, err := cp.Kube.ResourceV1().DeviceClasses().Create(ctx, &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: gpuv1alpha1.DRADriverName},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + gpuv1alpha1.DRADriverName + `"`},
		}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		framework.CreateReadyNode(ctx, t, cp.Kube, n.name, nil)
		// Socket paths must stay short: a temporary directory of its own.
		dir, err := os.MkdirTemp("", "dra-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		n.dir, n.cdiDir, n.gpuFile = dir, filepath.Join(dir, "cdi"), filepath.Join(dir, "gpus.yaml")
		// The kubelet's directories; the daemon makes its own plugin directory.
		for _, sub := range []string{"device-plugins", "registry"} {
			if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(n.gpuFile, []byte(n.gpus), 0o644); err != nil {
			t.Fatal(err)
		}
		agent := &nodeagent.Agent{NodeName: n.name, PluginDir: filepath.Join(dir, "device-plugins"), PluginRegistryDir: filepath.Join(dir, "registry"), Kube: cp.Kube}
		c.agents[n.name] = agent
		go func() {
			if err := agent.Run(ctx); err != nil {
				t.Errorf("node agent of %s: %v", n.name, err)
			}
		}()
		c.nodes[n.name] = n
		c.startDaemon(n)
	}
	for _, n := range nodes {
		c.waitPublished(n.name)
		c.waitGPUNode(n.name)
	}
	return c
}

// waitGPUNode waits until the node's GPUNode reports its GPUs as a DRA
// node's, as the webhook reads them: the GPUNode exists a moment before
// its daemon writes the status.
func (c *cluster) waitGPUNode(node string) {
	c.t.Helper()
	framework.WaitFor(c.t, time.Minute, node+" to report its GPUs in its GPUNode", func() (bool, string) {
		gn, err := c.cp.Tessera.GpuV1alpha1().GPUNodes().Get(c.ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return gn.Status.KubeletAPI == gpuv1alpha1.KubeletAPIDRA && len(gn.Status.Devices) > 0, fmt.Sprintf("status %+v", gn.Status)
	})
}

// startDaemon runs the node daemon in DRA mode until n.stop.
func (c *cluster) startDaemon(n *simNode) {
	c.t.Helper()
	cfg := config.Default()
	cfg.Mode = config.ModeDRA
	cfg.NodeName = n.name
	cfg.SplitCount = 4
	cfg.PluginDir = filepath.Join(n.dir, "device-plugins")
	cfg.DRAPluginDir = filepath.Join(n.dir, "plugin")
	cfg.PluginRegistryDir = filepath.Join(n.dir, "registry")
	cfg.CDISpecDir = n.cdiDir
	cfg.SimulatedGPUFile = n.gpuFile
	cfg.DynamicMIG = n.dynamicMIG
	cfg.SimulatedReloadPeriod.Duration = 200 * time.Millisecond
	cfg.RescanPeriod.Duration = config.MinRescanPeriod
	cfg.MetricsAddress = "127.0.0.1:0"
	p, err := plugin.New(cfg, plugin.Dependencies{Kube: c.cp.Kube, Tessera: c.cp.Tessera})
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := p.Run(ctx); err != nil {
			c.t.Errorf("node daemon of %s: %v", n.name, err)
		}
	}()
	n.stop = func() { cancel(); <-done }
	n.daemon = p
}

// slices returns the node's ResourceSlices of Tessera's driver.
func (c *cluster) slices(node string) ([]resourceapi.ResourceSlice, error) {
	list, err := c.cp.Kube.ResourceV1().ResourceSlices().List(c.ctx, metav1.ListOptions{
		FieldSelector: resourceapi.ResourceSliceSelectorNodeName + "=" + node + "," + resourceapi.ResourceSliceSelectorDriver + "=" + gpuv1alpha1.DRADriverName,
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// waitSlice waits until the node publishes one slice whose devices satisfy ok.
func (c *cluster) waitSlice(node, what string, ok func([]resourceapi.Device) bool) resourceapi.ResourceSlice {
	c.t.Helper()
	var slice resourceapi.ResourceSlice
	framework.WaitFor(c.t, time.Minute, node+" to publish "+what, func() (bool, string) {
		items, err := c.slices(node)
		if err != nil {
			return false, err.Error()
		}
		if len(items) != 1 {
			return false, fmt.Sprintf("%d slices", len(items))
		}
		slice = items[0]
		return ok(slice.Spec.Devices), fmt.Sprintf("devices %v", deviceNames(slice.Spec.Devices))
	})
	return slice
}

// waitPublished waits until the node publishes devices, in any number of
// slices: a GPU that makes MIG instances on demand has slices of its own.
func (c *cluster) waitPublished(node string) {
	c.t.Helper()
	framework.WaitFor(c.t, time.Minute, node+" to publish its GPUs", func() (bool, string) {
		items, err := c.slices(node)
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, s := range items {
			names = append(names, deviceNames(s.Spec.Devices)...)
		}
		return len(names) > 0, fmt.Sprintf("%d slices, devices %v", len(items), names)
	})
}

func deviceNames(devices []resourceapi.Device) []string {
	var out []string
	for _, d := range devices {
		out = append(out, d.Name)
	}
	return out
}

// claimTemplate is a ResourceClaimTemplate with the requests given.
func (c *cluster) claimTemplate(name string, spec resourceapi.DeviceClaim) {
	c.t.Helper()
	_, err := c.cp.Kube.ResourceV1().ResourceClaimTemplates(metav1.NamespaceDefault).Create(c.ctx, &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: spec}},
	}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
}

// gpuRequest asks for count GPUs of Tessera's class, each with the capacity given.
func gpuRequest(name string, count int64, capacity map[resourceapi.QualifiedName]string) resourceapi.DeviceRequest {
	exact := &resourceapi.ExactDeviceRequest{DeviceClassName: gpuv1alpha1.DRADriverName, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}
	if len(capacity) > 0 {
		exact.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{}}
		for k, v := range capacity {
			exact.Capacity.Requests[k] = resource.MustParse(v)
		}
	}
	return resourceapi.DeviceRequest{Name: name, Exactly: exact}
}

// claimPod is a pod on the node whose containers use the template's claim,
// each container through the request named beside it ("" for all).
func claimPod(name, node, template string, containers map[string]string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			NodeSelector:   map[string]string{corev1.LabelHostname: node},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: &template}},
		},
	}
	for cname, request := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
			Name: cname, Image: "cuda",
			Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpus", Request: request}}},
		})
	}
	return pod
}

func (c *cluster) createPod(pod *corev1.Pod) *corev1.Pod {
	c.t.Helper()
	pod, err := c.cp.Kube.CoreV1().Pods(pod.Namespace).Create(c.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return pod
}

// waitRunning waits until the node agent admitted the pod.
func (c *cluster) waitRunning(name string) *corev1.Pod {
	c.t.Helper()
	var pod *corev1.Pod
	framework.WaitFor(c.t, time.Minute, "pod "+name+" to run", func() (bool, string) {
		var err error
		pod, err = c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Get(c.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return pod.Status.Phase == corev1.PodRunning, fmt.Sprintf("phase %s, node %q, conditions %v", pod.Status.Phase, pod.Spec.NodeName, pod.Status.Conditions)
	})
	return pod
}

// waitUnschedulable waits until kube-scheduler finds the pod unschedulable;
// what says what is waited for.
func (c *cluster) waitUnschedulable(name, what string) {
	c.t.Helper()
	framework.WaitFor(c.t, time.Minute, what, func() (bool, string) {
		pod, err := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Get(c.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Reason == corev1.PodReasonUnschedulable {
				return true, cond.Message
			}
		}
		return false, fmt.Sprintf("node %q, conditions %v", pod.Spec.NodeName, pod.Status.Conditions)
	})
}

// waitRunningCreated creates the pod and waits until it runs.
func (c *cluster) waitRunningCreated(pod *corev1.Pod) *corev1.Pod {
	c.t.Helper()
	c.createPod(pod)
	return c.waitRunning(pod.Name)
}

// containerEnv returns the environment each container of the pod gets from
// its CDI devices, resolved through the node's CDI spec directory as a
// container runtime does.
func (c *cluster) containerEnv(pod *corev1.Pod) map[string][]string {
	c.t.Helper()
	cache := framework.CDIRuntimeView(c.t, c.nodes[pod.Spec.NodeName].cdiDir)
	out := map[string][]string{}
	for _, r := range c.agents[pod.Spec.NodeName].Results(pod.UID) {
		env, err := framework.CDIEnv(cache, r.CDIDevices)
		if err != nil {
			c.t.Fatalf("container %s of pod %s got %v", r.Container, pod.Name, err)
		}
		out[r.Container] = append(out[r.Container], env...)
	}
	return out
}

func filepathGlob(dir string) ([]string, error) {
	return filepath.Glob(filepath.Join(dir, "*.json"))
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/test/nodeagent"
)

// gpuResource is the count resource the device plugins register.
const gpuResource = "nvidia.com/gpu"

// startNodes creates each simulated node: its Node, a node agent playing
// the kubelet, and a device plugin reading the node's simulated GPUs.
func (c *cluster) startNodes(ctx context.Context) error {
	for _, n := range simNodes() {
		if _, err := framework.NewReadyNode(ctx, c.cp.Kube, n.name, nil); err != nil {
			return fmt.Errorf("creating node %s: %w", n.name, err)
		}
		dir := filepath.Join(c.o.stateDir, "nodes", n.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		pluginDir := filepath.Join(c.sockets, n.name, "device-plugins")
		if err := os.MkdirAll(pluginDir, 0o755); err != nil {
			return err
		}
		registryDir := filepath.Join(c.sockets, n.name, "plugins_registry")
		if err := os.MkdirAll(registryDir, 0o755); err != nil {
			return err
		}
		podResources := filepath.Join(c.sockets, n.name, "pod-resources.sock")
		agent := &nodeagent.Agent{NodeName: n.name, PluginDir: pluginDir, PluginRegistryDir: registryDir, PodResourcesSocket: podResources,
			Kube: c.cp.Kube, DeviceResources: []string{gpuResource}}
		c.agents = append(c.agents, agent)
		go func() {
			if err := agent.Run(ctx); err != nil {
				klog.FromContext(ctx).Error(err, "Node agent stopped", "node", n.name)
			}
		}()

		gpuFile := filepath.Join(dir, "gpus.json")
		if err := writeJSON(gpuFile, map[string]any{"gpus": n.gpus}); err != nil {
			return err
		}
		port, err := framework.FreePort()
		if err != nil {
			return err
		}
		metricsAddr := fmt.Sprintf("127.0.0.1:%d", port)
		configFile := filepath.Join(dir, "deviceplugin.json")
		cfg := map[string]any{
			"nodeName":         n.name,
			"splitCount":       10,
			"pluginDir":        pluginDir,
			"simulatedGPUFile": gpuFile,
			"metricsAddress":   metricsAddr,
			"heartbeatPeriod":  "10s",
			// The agent lists the pods it admits, as the kubelet does.
			"podResourcesSocket": podResources,
		}
		if c.o.dra() {
			cfg["mode"] = "dra"
			cfg["draPluginDir"] = filepath.Join(c.sockets, n.name, "plugins", gpuv1alpha1.DRADriverName)
			cfg["pluginRegistryDir"] = registryDir
			cfg["cdiSpecDir"] = c.cdiDir(n.name)
		}
		if err := writeJSON(configFile, cfg); err != nil {
			return err
		}
		p, err := c.daemon("deviceplugin-"+n.name, "deviceplugin", "--config", configFile, "--kubeconfig", c.cp.KubeconfigPath)
		if err != nil {
			return err
		}
		c.nodeDaemons[n.name] = p
		c.metrics = append(c.metrics, endpoint{"device plugin " + n.name, "http://" + metricsAddr + "/metrics"})
	}
	return c.waitNodesReady(ctx)
}

// cdiDir is where a node's daemon writes CDI specs in DRA mode.
func (c *cluster) cdiDir(node string) string {
	return filepath.Join(c.o.stateDir, "nodes", node, "cdi")
}

// waitNodesReady waits until every simulated node has a Ready GPUNode and
// offers its GPUs: as allocatable devices, or in DRA mode in its
// ResourceSlice.
func (c *cluster) waitNodesReady(ctx context.Context) error {
	for _, n := range simNodes() {
		offers := fmt.Sprintf("%s capacity", gpuResource)
		if c.o.dra() {
			offers = "a ResourceSlice with its GPUs"
		}
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			if exited, err := c.nodeDaemons[n.name].Exited(); exited {
				return false, fmt.Errorf("its daemon exited (%v):\n%s", err, c.nodeDaemons[n.name].LogTail(2000))
			}
			gn, err := c.cp.Tessera.GpuV1alpha1().GPUNodes().Get(ctx, n.name, metav1.GetOptions{})
			if err != nil || !ready(gn) {
				return false, nil
			}
			if c.o.dra() {
				return c.publishedGPUs(ctx, n.name) == len(n.gpus), nil
			}
			node, err := c.cp.Kube.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			q := node.Status.Allocatable[corev1.ResourceName(gpuResource)]
			return q.Value() > 0, nil
		})
		if err != nil {
			return fmt.Errorf("node %s did not get a ready GPUNode and %s (see %s): %w",
				n.name, offers, filepath.Join(c.o.stateDir, "deviceplugin-"+n.name+".log"), err)
		}
	}
	return nil
}

// publishedGPUs counts the devices of the node's ResourceSlices of
// Tessera's driver.
func (c *cluster) publishedGPUs(ctx context.Context, node string) int {
	list, err := c.cp.Kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
		FieldSelector: resourceapi.ResourceSliceSelectorNodeName + "=" + node + "," + resourceapi.ResourceSliceSelectorDriver + "=" + gpuv1alpha1.DRADriverName,
	})
	if err != nil {
		return 0
	}
	n := 0
	for _, s := range list.Items {
		n += len(s.Spec.Devices)
	}
	return n
}

func ready(gn *gpuv1alpha1.GPUNode) bool {
	for _, cond := range gn.Status.Conditions {
		if cond.Type == gpuv1alpha1.GPUNodeReady {
			return cond.Status == metav1.ConditionTrue
		}
	}
	return false
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
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
		pluginDir := filepath.Join(dir, "device-plugins")
		if err := os.MkdirAll(pluginDir, 0o755); err != nil {
			return err
		}
		agent := &nodeagent.Agent{NodeName: n.name, PluginDir: pluginDir, Kube: c.cp.Kube, DeviceResources: []string{gpuResource}}
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
		if err := writeJSON(configFile, map[string]any{
			"nodeName":         n.name,
			"splitCount":       10,
			"pluginDir":        pluginDir,
			"simulatedGPUFile": gpuFile,
			"metricsAddress":   metricsAddr,
			"heartbeatPeriod":  "10s",
		}); err != nil {
			return err
		}
		if err := c.daemon("deviceplugin-"+n.name, "deviceplugin", "--config", configFile, "--kubeconfig", c.cp.KubeconfigPath); err != nil {
			return err
		}
		c.metrics = append(c.metrics, endpoint{"device plugin " + n.name, "http://" + metricsAddr + "/metrics"})
	}
	return c.waitNodesReady(ctx)
}

// waitNodesReady waits until every simulated node has a Ready GPUNode and
// advertises its GPUs.
func (c *cluster) waitNodesReady(ctx context.Context) error {
	for _, n := range simNodes() {
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			gn, err := c.cp.Tessera.GpuV1alpha1().GPUNodes().Get(ctx, n.name, metav1.GetOptions{})
			if err != nil || !ready(gn) {
				return false, nil
			}
			node, err := c.cp.Kube.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			q := node.Status.Allocatable[corev1.ResourceName(gpuResource)]
			return q.Value() > 0, nil
		})
		if err != nil {
			return fmt.Errorf("node %s did not get a ready GPUNode and %s capacity (see %s): %w",
				n.name, gpuResource, filepath.Join(c.o.stateDir, "deviceplugin-"+n.name+".log"), err)
		}
	}
	return nil
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

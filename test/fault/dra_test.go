package fault

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/dra"
	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/webhook/admission"
	webhookapp "github.com/tessera-gpu/tessera/webhook/app"
)

// startDRAMode runs stock kube-scheduler, whose DynamicResources plugin
// allocates the claims, the DeviceClass of Tessera's driver, and Tessera's
// webhook in DRA mode, which turns the suite's pods into claims. The node
// daemon is built to run as a process, so that it can be killed.
func (c *cluster) startDRAMode(t *testing.T) {
	t.Helper()
	c.cp.StartScheduler(t, framework.StockSchedulerConfig)
	if _, err := c.cp.Kube.ResourceV1().DeviceClasses().Create(c.ctx, dra.DeviceClass(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.cp.StartWebhook(t, func(o *webhookapp.Options) { o.Admission.Mode = admission.ModeDRA })
	// The API server reads the webhook's caBundle through its own informer.
	framework.WaitFor(t, time.Minute, "the API server to turn a GPU pod into claims", func() (bool, string) {
		pod, err := c.cp.Kube.CoreV1().Pods(namespace).Create(c.ctx, gpuPod("probe", c.schedulerName()), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err.Error()
		}
		return len(pod.Spec.ResourceClaims) > 0, fmt.Sprintf("claims %v", pod.Spec.ResourceClaims)
	})
	c.daemonBin = framework.BuildDevicePlugin(t)
}

// startDRADaemon runs the node daemon in DRA mode as a process of its own,
// as its DaemonSet runs it.
func (c *cluster) startDRADaemon(t *testing.T, n *simNode) {
	t.Helper()
	n.daemonRuns++
	p, err := framework.StartProcess(n.dir, c.daemonBin, fmt.Sprintf("node-daemon-%d", n.daemonRuns),
		"--kubeconfig="+c.cp.KubeconfigPath, "--node-name="+n.name, "--mode=dra", fmt.Sprintf("--split-count=%d", splitCount),
		"--device-plugin-dir="+n.pluginDir, "--plugin-registry-dir="+n.registryDir, "--dra-plugin-dir="+n.draDir,
		"--cdi-spec-dir="+n.cdiDir, "--simulated-gpu-file="+n.gpuFile, "--metrics-address=", "-v=2")
	if err != nil {
		t.Fatal(err)
	}
	n.daemon = p
}

// rebootNode does to the node what a reboot does: its daemon and kubelet
// die at once, the runtime's CDI spec directory (a tmpfs) is emptied while
// the kubelet's and the plugin's directories stay, and both start again,
// the kubelet starting the containers of its running pods anew.
func (c *cluster) rebootNode(t *testing.T, n *simNode) {
	t.Helper()
	n.daemon.Kill()
	n.agentRun.stop(t)
	if err := os.RemoveAll(n.cdiDir); err != nil {
		t.Fatal(err)
	}
	n.agent.Reboot()
	c.startDRADaemon(t, n)
	c.startAgent(n)
}

// killDaemonInBurst frees the GPUs of the node's running pods at once, so
// that the pods placed on it in their stead are prepared together, and
// kills the node's daemon as soon as one of them is bound but not yet
// running, then starts it again.
func (c *cluster) killDaemonInBurst(ctx context.Context, t *testing.T, n *simNode) {
	t.Helper()
	pods, err := c.cp.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.name})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning {
			_ = c.cp.Kube.CoreV1().Pods(namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		}
	}
	// Killed without waiting longer: a burst that never comes is a kill
	// like any other.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && c.preparing(ctx, n) == 0 {
		time.Sleep(20 * time.Millisecond)
	}
	n.daemon.Kill()
	t.Logf("Killed the node daemon of %s with %d pods bound to it and not running", n.name, c.preparing(ctx, n))
	time.Sleep(time.Second)
	c.startDRADaemon(t, n)
}

// preparing counts the live pods bound to the node and not running.
func (c *cluster) preparing(ctx context.Context, n *simNode) int {
	pods, err := c.cp.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.name})
	if err != nil {
		return 0
	}
	count := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodPending {
			count++
		}
	}
	return count
}

// waitSlice waits until the node publishes its GPUs in a ResourceSlice.
func (c *cluster) waitSlice(t *testing.T, node string) {
	t.Helper()
	framework.WaitFor(t, 2*time.Minute, "node "+node+" to publish its GPUs", func() (bool, string) {
		list, err := c.cp.Kube.ResourceV1().ResourceSlices().List(c.ctx, metav1.ListOptions{
			FieldSelector: resourceapi.ResourceSliceSelectorNodeName + "=" + node + "," + resourceapi.ResourceSliceSelectorDriver + "=" + gpuv1alpha1.DRADriverName,
		})
		if err != nil {
			return false, err.Error()
		}
		devices := 0
		for _, s := range list.Items {
			devices += len(s.Spec.Devices)
		}
		return devices == gpusPerNode, fmt.Sprintf("%d slices, %d devices", len(list.Items), devices)
	})
}

// leftOnNode names what the node's daemon still holds: claims in its
// checkpoint and CDI spec files.
func leftOnNode(n *simNode) ([]string, error) {
	var out []string
	data, err := os.ReadFile(filepath.Join(n.draDir, dra.CheckpointFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err == nil {
		var checkpoint struct {
			Claims map[string]struct{ Namespace, Name string } `json:"claims"`
		}
		if err := json.Unmarshal(data, &checkpoint); err != nil {
			return nil, fmt.Errorf("reading the checkpoint of %s: %w", n.name, err)
		}
		for uid, claim := range checkpoint.Claims {
			out = append(out, fmt.Sprintf("%s: claim %s/%s (%s) in the checkpoint", n.name, claim.Namespace, claim.Name, uid))
		}
	}
	specs, err := filepath.Glob(filepath.Join(n.cdiDir, "*"))
	if err != nil {
		return nil, err
	}
	for _, s := range specs {
		out = append(out, fmt.Sprintf("%s: CDI spec %s", n.name, filepath.Base(s)))
	}
	return out, nil
}

package deviceplugin

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/options"
	"github.com/tessera-gpu/tessera/test/framework"
)

// Liveness settings short enough for a test: the plugin renews its Lease
// every second; the extender allows fifteen, longer than a restart of the
// plugin takes on a loaded machine.
const (
	testHeartbeatPeriod = time.Second
	testMaxAge          = 15 * time.Second
)

// TestCrashedPluginIsMarkedStale runs the device plugin as its own
// process. Killed and started again within the age, it leaves the GPUNode
// unwritten and only renews its Lease. Killed for good, the node is
// marked stale once its Lease is older than the extender allows:
// `kubectl get gpunodes` shows READY Unknown (HeartbeatStale) and the
// scheduler refuses the node, saying why.
func TestCrashedPluginIsMarkedStale(t *testing.T) {
	bin := framework.BuildDevicePlugin(t)
	cfg := options.NewConfig()
	cfg.HeartbeatMaxAge.Duration = testMaxAge
	c := newCluster(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const node = "gpu-node-1"
	pluginDir, gpuFile := c.addNode(t, simNode{name: node, gpus: oneGPU})
	dir := t.TempDir()
	start := func() *framework.Process {
		t.Helper()
		p, err := framework.StartProcess(dir, bin, "tessera-device-plugin",
			"--kubeconfig="+c.cp.KubeconfigPath, "--node-name="+node, "--split-count=4",
			"--device-plugin-dir="+pluginDir, "--simulated-gpu-file="+gpuFile, "--metrics-address=",
			"--heartbeat-period="+testHeartbeatPeriod.String(), "-v=2")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("device plugin log:\n%s", p.LogTail(4000))
			}
			p.Kill()
		})
		return p
	}
	leases := c.cp.Kube.CoordinationV1().Leases(gpuv1alpha1.DefaultNodeLeaseNamespace)
	renewedAfter := func(after time.Time) time.Time {
		t.Helper()
		var renewed time.Time
		framework.WaitFor(t, time.Minute, "the plugin to renew its Lease", func() (bool, string) {
			l, err := leases.Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			renewed = l.Spec.RenewTime.Time
			return renewed.After(after), fmt.Sprintf("renewed at %v", renewed)
		})
		return renewed
	}

	plugin := start()
	c.waitNodeReady(t, node)
	// The extender writes the one column only it knows, the free memory,
	// within its own period of the node appearing: only once it has does
	// the GPUNode hold all it will while no pod comes or goes.
	var gn *gpuv1alpha1.GPUNode
	framework.WaitFor(t, time.Minute, "the extender to publish the node's free memory", func() (bool, string) {
		var err error
		if gn, err = c.cp.Tessera.GpuV1alpha1().GPUNodes().Get(ctx, node, metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		return gn.Status.FreeMemoryMiB != nil, "no free memory in the status"
	})
	published := gn.ResourceVersion

	// A crash and a restart within the age: the Lease moves, the GPUNode does not.
	plugin.Kill()
	restartedAt := time.Now()
	plugin = start()
	renewedAfter(restartedAt)
	renewedAfter(time.Now()) // a second renewal: the restarted plugin has settled
	framework.WaitFor(t, time.Minute, "the restarted plugin to register again", func() (bool, string) {
		return strings.Contains(plugin.LogTail(100000), "Registered with the kubelet"), "not registered"
	})
	renewedAfter(time.Now())
	gn, err := c.cp.Tessera.GpuV1alpha1().GPUNodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if gn.ResourceVersion != published {
		t.Errorf("an unchanged GPUNode was rewritten: resource version %s, then %s; written by %s; status %+v", published, gn.ResourceVersion, writers(gn), gn.Status)
	}

	// A crash for good.
	plugin.Kill()
	l, err := leases.Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lastRenewal := l.Spec.RenewTime.Time
	var row map[string]any
	framework.WaitFor(t, testMaxAge+time.Minute, "kubectl get gpunodes to show the node stale", func() (bool, string) {
		row = gpuNodeRow(ctx, t, c, node)
		return row["Ready"] == "Unknown", fmt.Sprintf("row %v", row)
	})
	if row["Reason"] != gpuv1alpha1.GPUNodeHeartbeatStale {
		t.Errorf("kubectl get gpunodes: REASON %v, want %s", row["Reason"], gpuv1alpha1.GPUNodeHeartbeatStale)
	}
	if gn, err = c.cp.Tessera.GpuV1alpha1().GPUNodes().Get(ctx, node, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	ready := meta.FindStatusCondition(gn.Status.Conditions, gpuv1alpha1.GPUNodeReady)
	if !strings.Contains(ready.Message, "has not renewed its Lease for") {
		t.Errorf("Ready message %q, want the Lease's age", ready.Message)
	}
	// Not before the age: the condition's time has second precision.
	if early := lastRenewal.Add(testMaxAge).Truncate(time.Second); ready.LastTransitionTime.Time.Before(early) {
		t.Errorf("marked stale at %v, before the Lease (renewed %v) was %s old", ready.LastTransitionTime, lastRenewal, testMaxAge)
	}

	// The scheduler refuses the node, saying why.
	pod, err := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, gpuPod("after-crash", 1000), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(t, time.Minute, "the pod to be refused", func() (bool, string) {
		p, err := c.cp.Kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
				return strings.Contains(cond.Message, "heartbeat is stale"), cond.Message
			}
		}
		return false, fmt.Sprintf("node %q, conditions %+v", p.Spec.NodeName, p.Status.Conditions)
	})

	// Started again: the plugin renews its Lease and says Ready again.
	start()
	c.waitNodeReady(t, node)
	if row := gpuNodeRow(ctx, t, c, node); row["Ready"] != "True" {
		t.Errorf("kubectl get gpunodes after the restart: %v, want READY True", row)
	}
}

// gpuNodeRow is the node's row of `kubectl get gpunodes`, by column: the
// Table the API server renders from the printer columns.
func gpuNodeRow(ctx context.Context, t *testing.T, c *cluster, node string) map[string]any {
	t.Helper()
	row := framework.GetTableRow(ctx, t, c.cp.Kube, "/apis/gpu.tessera.dev/v1alpha1/gpunodes/"+node)
	if _, ok := row["Reason"]; !ok {
		t.Fatalf("kubectl get gpunodes shows no REASON: %v", row)
	}
	return row
}

// writers says who last wrote what of the object, and when, from its
// managed fields.
func writers(obj metav1.Object) string {
	var out []string
	for _, f := range obj.GetManagedFields() {
		out = append(out, fmt.Sprintf("%s (%s %s at %v)", f.Manager, f.Operation, cmp.Or(f.Subresource, "object"), f.Time))
	}
	return strings.Join(out, ", ")
}

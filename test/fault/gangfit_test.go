package fault

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/tessera-gpu/tessera/scheduler/options"
	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/test/nodeagent"
)

const (
	// holdTimeout is the gang-fit hold timeout the suite sets: an admitted
	// Workload's room is held this long for its pods not yet placed.
	holdTimeout = 30 * time.Second
	// refusedBinds is how long the API server refuses bindings in the
	// failed-bind fault.
	refusedBinds = 15 * time.Second
	// retryAfter is when Kueue tries again on its own a Workload the check
	// sent back: long enough that only a free lets it in before.
	retryAfter = time.Minute
)

// TestGangFitFaults runs the gang-fit admission check (deploy/examples/
// kueue/gang-fit.yaml) with real Kueue under a stream of Jobs of several
// GPU-slice pods, on GPUs fragmented by running pods that end one by one,
// and breaks the cluster one way at a time: what places pods killed and
// rolled over to a second process, a node deleted and added again, the
// bindings of new pods refused for a while, kube-apiserver restarted. After each it checks from API state that no
// GPU was over-committed, that no pod of an admitted Job stayed Pending
// longer than the hold timeout and the liveness bound, that no Workload
// was deactivated or rejected (every Job fits the cluster with its nodes
// back), and that once the fragments end every waiting Workload is
// admitted, soon after that free and long before Kueue's own retry, and
// its pods run. Once with kube-scheduler and the extender, once with
// tessera-scheduler.
func TestGangFitFaults(t *testing.T) {
	for _, mode := range []string{extenderMode, pluginMode} {
		t.Run(mode, func(t *testing.T) { testGangFitFaults(t, mode) })
	}
}

// gangFault is one thing the suite breaks while the stream runs.
type gangFault struct {
	name   string
	inject func(ctx context.Context, t *testing.T, c *cluster, l *gangLoad)
	// bound is how long a pod of an admitted Job may stay Pending, and
	// how long after the last free a Workload it made room for may wait
	// to be admitted.
	bound, freeBound time.Duration
}

func gangFaults() []gangFault {
	bound := holdTimeout + maxWait
	// A Workload sent back is let in when a free makes room for it, well
	// before Kueue's own retry; maxWait gives that a loaded machine.
	freeBound := maxWait
	restarts := apiServerRestarts(2)
	return []gangFault{
		{"none", func(context.Context, *testing.T, *cluster, *gangLoad) { time.Sleep(10 * time.Second) }, bound, freeBound},
		{"placer killed 2 times, then rolled over", func(ctx context.Context, t *testing.T, c *cluster, _ *gangLoad) {
			for range 2 {
				c.restartPlacer(t, time.Second)
				time.Sleep(3 * time.Second)
			}
			c.rollOver(ctx, t)
		}, bound, freeBound},
		{"node deleted and added again", func(ctx context.Context, t *testing.T, c *cluster, l *gangLoad) {
			n := c.nodes[len(c.nodes)-1]
			c.deleteNode(ctx, t, n)
			// A Job only the missing node can run is sent back, not
			// rejected, and runs there once the node is back.
			l.submitNext(gangJobKind{name: "pinned", pods: 1, memoryMiB: 8000, node: n.name})
			time.Sleep(10 * time.Second)
			c.addNodeAgain(ctx, t, n)
		}, bound, freeBound},
		{"binds of new pods refused for 15 s", func(ctx context.Context, t *testing.T, c *cluster, l *gangLoad) {
			// The stream's pods are named after its prefix: every one
			// placed meanwhile fails to bind, and its room must go back to
			// its gang, not to whoever asks next.
			allow := c.cp.RefuseBindings(ctx, t, l.prefix+"-")
			time.Sleep(refusedBinds)
			allow()
		}, bound + refusedBinds, freeBound + refusedBinds},
		{restarts.name, func(ctx context.Context, t *testing.T, c *cluster, _ *gangLoad) { restarts.inject(ctx, t, c) },
			bound + watchBackoff, freeBound + watchBackoff},
	}
}

func testGangFitFaults(t *testing.T, mode string) {
	examples := filepath.Join(framework.RepoRoot(), "deploy", "examples", "kueue")
	c := startClusterWith(t, mode, nodes, setup{
		workloads: true,
		prepare: func(t *testing.T, cp *framework.ControlPlane) {
			cp.StartKueue(t)
			if err := framework.ApplyManifests(context.Background(), cp.Config,
				filepath.Join(examples, "queues.yaml"), filepath.Join(examples, "gang-fit.yaml")); err != nil {
				t.Fatalf("applying the gang-fit example: %v", err)
			}
			cp.StartWebhook(t, nil)
		},
		configure: func(cfg *options.Config) {
			cfg.GangFit.Enabled = true
			cfg.GangFit.HoldTimeout.Duration = holdTimeout
			cfg.GangFit.RetryAfter.Duration = retryAfter
		},
		edits: map[string]string{
			"gangFit:\n            enabled: false\n            holdTimeout: 5m\n            retryAfter: 15s": "gangFit:\n            enabled: true\n            holdTimeout: 30s\n            retryAfter: 1m",
		},
	})
	client, err := dynamic.NewForConfig(c.cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	t.Cleanup(cancel)

	var report []string
	for i, f := range gangFaults() {
		t.Run(f.name, func(t *testing.T) {
			m := newGangMonitor(c.cp, client)
			mctx, stopMonitor := context.WithCancel(ctx)
			defer stopMonitor()
			go m.run(mctx)
			prefix := fmt.Sprintf("g%d", i)
			c.fragmentGPUs(ctx, t, prefix)
			l := startGangLoad(ctx, c, prefix)
			time.Sleep(3 * time.Second)
			f.inject(ctx, t, c, l)
			time.Sleep(5 * time.Second)
			l.stop()

			afterFree, late := c.drain(ctx, t, m, client)
			c.checkGang(ctx, t)
			longest, pod := m.longestPending()
			overCommits, refused := m.findings()
			seen, retried, waits := m.admissions()
			line := fmt.Sprintf("%-40s %2d Workloads, %2d sent back; created→admitted p50 %5.1f s, max %5.1f s; longest Pending pod %5.1f s; after the last free: admitted within %4.1f s",
				f.name, seen, retried, quantile(waits, 0.5).Seconds(), quantile(waits, 1).Seconds(), longest.Seconds(), afterFree.Seconds())
			report = append(report, line)
			t.Log(line)
			for _, v := range overCommits {
				t.Error(v)
			}
			for _, v := range refused {
				t.Errorf("%s; every Job of the stream fits the cluster with its nodes", v)
			}
			if afterFree > f.freeBound {
				t.Errorf("Workload %s was admitted %s after the free that made room for it; the bound is %s, Kueue's own retry %s",
					late, afterFree.Round(100*time.Millisecond), f.freeBound, retryAfter)
			}
			if longest > f.bound {
				t.Errorf("pod %s of an admitted Job stayed Pending %s; the bound is %s (hold timeout %s)", pod, longest.Round(100*time.Millisecond), f.bound, holdTimeout)
			}
			c.deleteGangWork(ctx, t)
		})
	}
	t.Logf("gang-fit faults:\n%s", strings.Join(report, "\n"))
}

// drain ends the fragments, the last free, and waits until every Workload
// left is admitted and its pods run. It returns how long after that free
// the last of the Workloads then waiting was admitted, and which it was.
func (c *cluster) drain(ctx context.Context, t *testing.T, m *gangMonitor, client dynamic.Interface) (time.Duration, string) {
	t.Helper()
	wls, err := client.Resource(framework.KueueResource("workloads")).Namespace(gangNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cp.Kube.CoreV1().Pods(namespace).DeleteCollection(ctx,
		metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	framework.WaitFor(t, retryAfter+time.Minute, "every Job to be admitted and its pods to run", func() (bool, string) {
		jobs, err := c.cp.Kube.BatchV1().Jobs(gangNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		pods, err := c.cp.Kube.CoreV1().Pods(gangNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		running := map[string]int32{}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running[p.Labels[batchv1.JobNameLabel]]++
			}
		}
		var left []string
		for _, j := range jobs.Items {
			if want := ptr.Deref(j.Spec.Parallelism, 1); running[j.Name] < want {
				left = append(left, fmt.Sprintf("%s (suspended %v, %d of %d running)", j.Name, ptr.Deref(j.Spec.Suspend, false), running[j.Name], want))
			}
		}
		return len(left) == 0, "waiting: " + strings.Join(left, ", ")
	})
	var longest time.Duration
	var name string
	for _, wl := range wls.Items {
		if conditionTrue(&wl, "Admitted") {
			continue
		}
		if at := m.admittedAt(wl.GetUID()); !at.IsZero() && at.Sub(freed) > longest {
			longest, name = at.Sub(freed), wl.GetName()
		}
	}
	return longest, name
}

// checkGang reads the API until no allocation is orphaned, then checks
// that every bound pod, in every namespace, has exactly its own allocation
// and was served from it, and that the pinned Job, if any, runs on its
// node.
func (c *cluster) checkGang(ctx context.Context, t *testing.T) {
	t.Helper()
	var s *state
	framework.WaitFor(t, 90*time.Second, "no orphaned allocation", func() (bool, string) {
		var err error
		if s, err = readStateIn(ctx, c.cp, ""); err != nil {
			return false, err.Error()
		}
		var o []string
		for _, what := range s.orphanedAllocations() {
			o = append(o, what)
		}
		return len(o) == 0, "allocations without their pod: " + strings.Join(o, "; ")
	})
	var agents []*nodeagent.Agent
	for _, n := range c.nodes {
		agents = append(agents, n.agent)
	}
	for _, v := range s.misallocated(agents) {
		t.Error(v)
	}
	for _, p := range s.pods {
		if want := p.Spec.NodeSelector[corev1.LabelHostname]; want != "" && p.Spec.NodeName != want {
			t.Errorf("pod %s/%s may run only on %s but is on %q", p.Namespace, p.Name, want, p.Spec.NodeName)
		}
	}
}

// deleteGangWork deletes the stream's Jobs and what is left of the
// fragments, and waits until no pod, allocation or Workload is left.
func (c *cluster) deleteGangWork(ctx context.Context, t *testing.T) {
	t.Helper()
	err := c.cp.Kube.BatchV1().Jobs(gangNamespace).DeleteCollection(ctx,
		metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.waitNoPods(ctx, t)
}

// waitNoPods waits until no pod or allocation is left in any namespace.
func (c *cluster) waitNoPods(ctx context.Context, t *testing.T) {
	t.Helper()
	framework.WaitFor(t, 90*time.Second, "the pods and their allocations to be gone", func() (bool, string) {
		s, err := readStateIn(ctx, c.cp, "")
		if err != nil {
			return false, err.Error()
		}
		return len(s.pods)+len(s.allocations) == 0, fmt.Sprintf("%d pods, %d allocations", len(s.pods), len(s.allocations))
	})
}

// waitRunning waits until n pods of the namespace run.
func (c *cluster) waitRunning(t *testing.T, ns string, n int) {
	t.Helper()
	framework.WaitFor(t, time.Minute, fmt.Sprintf("%d pods to run in %s", n, ns), func() (bool, string) {
		pods, err := c.cp.Kube.CoreV1().Pods(ns).List(c.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running >= n, fmt.Sprintf("%d running", running)
	})
}

// rollOver runs a second placer beside the first, as a rolling update
// does, then replaces the first and stops the second: both take part in
// the gang-fit election, and every one holds the admitted Workloads' room.
// In plugin mode the second places no pod of the suite (it serves
// another scheduler name, as kube-scheduler's own election would keep it
// from placing any while the first leads); the first is killed.
func (c *cluster) rollOver(ctx context.Context, t *testing.T) {
	t.Helper()
	if c.mode == pluginMode {
		config := strings.Replace(c.schedulerConfig, "- schedulerName: "+schedulerName, "- schedulerName: "+schedulerName+"-next", 1)
		startCtx, cancel := context.WithTimeout(ctx, framework.SchedulerReadyTimeout)
		second, err := c.cp.StartSchedulerBinaryProcess(startCtx, c.schedulerBin, config)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		c.cp.KillProcess(c.scheduler)
		c.startTesseraScheduler(t)
		time.Sleep(5 * time.Second)
		c.cp.KillProcess(second)
		return
	}
	second := c.serveExtender(framework.FreeAddress(t))
	time.Sleep(5 * time.Second)
	c.extender.stop(t)
	c.startExtender(c.extenderAddr)
	time.Sleep(5 * time.Second)
	second.stop(t)
}

// deleteNode takes a node away as a replaced machine goes: its daemon and
// kubelet stand-in stop, its Node and GPUNode are deleted, and so are its
// pods, as the pod garbage collector deletes those of a node that is gone.
func (c *cluster) deleteNode(ctx context.Context, t *testing.T, n *simNode) {
	t.Helper()
	n.agentRun.stop(t)
	n.pluginRun.stop(t)
	if err := c.cp.Kube.CoreV1().Nodes().Delete(ctx, n.name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.cp.Tessera.GpuV1alpha1().GPUNodes().Delete(ctx, n.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	pods, err := c.cp.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.name})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		err := c.cp.Kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
}

// addNodeAgain adds the node back, as its machine joins again, and waits
// until it offers its GPUs.
func (c *cluster) addNodeAgain(ctx context.Context, t *testing.T, n *simNode) {
	t.Helper()
	framework.CreateReadyNode(ctx, t, c.cp.Kube, n.name, nil)
	c.startPlugin(t, n)
	c.startAgent(n)
	c.waitNodeReady(t, n.name)
}

// quantile returns the q-quantile of sorted durations; 0 if none.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

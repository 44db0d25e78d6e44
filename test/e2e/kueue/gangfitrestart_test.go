package kueue

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tessera-gpu/tessera/scheduler/options"
	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/webhook/admission"
)

// TestGangFitSurvivesRestarts runs the gang-fit check through what a
// scheduler pod meets every day, on one node of 2 A100s (81,920 MiB),
// with Kueue's retry clock set to 10 minutes so that only a free can let
// a Workload in early:
//   - a Job of 2 × 30,000 MiB is admitted and placed, one pod per GPU;
//     the extender restarts; a pod of 40,000 MiB is placed beside them,
//     in room the restarted extender would hold again if it counted the
//     running pods as still to come;
//   - a second extender starts beside the first, as in a rolling update,
//     and decides nothing while the first leads; once the first stops,
//     the second decides the next Job;
//   - a Job of 2 × 60,000 MiB fits nowhere and is sent back; when the
//     running pods end, it is admitted at once, long before Kueue's
//     retry time.
func TestGangFitSurvivesRestarts(t *testing.T) {
	ctx := context.Background()
	// The extenders run for the whole test, whichever subtest starts them.
	top := t
	e := startQueues(t)
	cfg := extenderConfig(t, func(c *options.Config) {
		c.GangFit.Enabled = true
		c.GangFit.RetryAfter.Duration = 10 * time.Minute
	})
	first := runExtender(t, e.cp, cfg, "127.0.0.1:0")
	t.Cleanup(func() { first.stop() })
	e.extender = first.addr
	e.cp.StartShippedScheduler(t, "http://"+e.extender)
	e.startWebhookAndKubelets(t)
	if err := framework.ApplyManifests(ctx, e.cp.Config, filepath.Join(framework.RepoRoot(), "deploy", "examples", "kueue", "gang-fit.yaml")); err != nil {
		t.Fatalf("applying the gang-fit example: %v", err)
	}
	const node = "restart-a100"
	e.addNode(ctx, t, node, 2)

	held := e.submit(ctx, t, gpuJob("gang", "held", 2, slice{gpus: 1, memoryMiB: 30000, cores: 10}))
	e.waitAdmitted(t, held, "gang")
	e.waitPlaced(ctx, t, held, node, 2)

	probe := plainPod("default", "probe", nil, slice{gpus: 1, memoryMiB: 40000, cores: 10})
	t.Run("restarted: the running pods' room is not held again", func(t *testing.T) {
		first.stop()
		first = runExtender(top, e.cp, cfg, first.addr)
		if _, err := e.cp.Kube.CoreV1().Pods(probe.Namespace).Create(ctx, probe, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.WaitFor(t, time.Minute, "the probe pod to be placed beside the Job's", func() (bool, string) {
			got, err := e.cp.Kube.CoreV1().Pods(probe.Namespace).Get(ctx, probe.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return got.Spec.NodeName == node, "node " + got.Spec.NodeName
		})
	})

	t.Run("rollout: one scheduler decides", func(t *testing.T) {
		second := runExtender(top, e.cp, cfg, "127.0.0.1:0")
		top.Cleanup(second.stop)
		e.waitLeader(t, first.addr, second.addr)
		first.stop()
		e.waitLeader(t, second.addr)
		small := e.submit(ctx, t, gpuJob("gang", "small", 1, slice{gpus: 1, memoryMiB: 1000, cores: 10}))
		framework.WaitFor(t, time.Minute, "the second scheduler to decide Job small", func() (bool, string) {
			state, message := e.gangFitState(ctx, t, small)
			return state == "Ready", state + ": " + message
		})
		// The first comes back, as the new pod of the rollout, and the
		// second goes.
		first = runExtender(top, e.cp, cfg, first.addr)
		second.stop()
	})

	t.Run("sent back, then let in when room frees", func(t *testing.T) {
		big := e.submit(ctx, t, gpuJob("gang", "big", 2, slice{gpus: 1, memoryMiB: 60000, cores: 10}))
		framework.WaitFor(t, time.Minute, "the check to send Job big back", func() (bool, string) {
			state, message := e.gangFitState(ctx, t, big)
			return state == "Retry" || strings.Contains(message, "Previously: Retry"), state + ": " + message
		})
		e.waitSuspendedWithoutPods(ctx, t, big)
		freed := time.Now()
		if err := e.cp.Kube.BatchV1().Jobs(held.Namespace).Delete(ctx, held.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
			t.Fatal(err)
		}
		if err := e.cp.Kube.CoreV1().Pods(probe.Namespace).Delete(ctx, probe.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		e.waitAdmitted(t, big, "gang")
		t.Logf("Job big admitted %s after the GPUs freed (Kueue's own retry was 10 minutes away)", time.Since(freed).Round(time.Millisecond))
		e.waitPlaced(ctx, t, big, node, 2)
	})
	e.cp.CheckGPUAccounting(ctx, t, admission.DefaultSchedulerName)
}

// waitLeader waits until the extender at addr, and no other of those
// given, says it decides the gang-fit checks.
func (e *env) waitLeader(t *testing.T, addr string, others ...string) {
	t.Helper()
	framework.WaitFor(t, time.Minute, "the extender at "+addr+" to lead gang-fit", func() (bool, string) {
		if !leads(addr) {
			return false, "it does not lead"
		}
		for _, other := range others {
			if leads(other) {
				return false, "the extender at " + other + " leads too"
			}
		}
		return true, ""
	})
}

// leads reports whether the extender at addr says it decides the checks.
func leads(addr string) bool {
	body, err := httpGet("http://" + addr + "/metrics")
	return err == nil && strings.Contains(body, "\ntessera_gang_fit_leader 1\n")
}

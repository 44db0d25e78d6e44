package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tessera-gpu/tessera/scheduler/options"
	"github.com/tessera-gpu/tessera/test/framework"
)

// TestExtenderFitGateRollout runs two extenders with the fit gate side by
// side, as a rollout or the chart's replicas do, where the extender that
// kube-scheduler asks need not be the one that lifts gates. It checks
// that the leader learns from the API how the cycles of the pods it
// released ended elsewhere, so that a free right after a placement
// releases the next pod at once and no pod's room is counted twice; and
// that once the leader stops, the other takes over, releases none of the
// pods still held, and then releases exactly one pod per pod's room, in
// queue order.
func TestExtenderFitGateRollout(t *testing.T) {
	const (
		group, node = "gaterollout", "gaterollout-1"
		held        = 40
	)
	cp := framework.Start(t, framework.Options{ControllerManager: true})
	fitGate := func(cfg *options.Config) { cfg.FitGate.Enabled = true }
	leader := startExtender(t, cp, nil, fitGate)
	ctx := t.Context()
	waitFitGateLeader(ctx, t, cp)
	// kube-scheduler asks the extender that does not lead.
	e := &env{cp: cp, extender: startExtender(t, cp, nil, fitGate)}
	cp.StartShippedScheduler(t, "http://"+e.extender.addr)
	e.plugin = startDevicePlugin(t, cp, serveDelay)

	e.createPriorityClasses(ctx, t)
	e.addNode(ctx, t, node, group, 10, a100(0), a100(0))
	// A 10 GiB filler on each GPU leaves 70 GiB free on each.
	var fillers []string
	for i := range 2 {
		name := fmt.Sprintf("filler-%d", i)
		e.createPod(ctx, t, gated(lowPod(name, group, 10240)))
		e.waitBound(ctx, t, name)
		fillers = append(fillers, name)
	}
	for i := range held {
		pod := gated(lowPod(fmt.Sprintf("held-%02d", i), group, 76800))
		pod.Labels = map[string]string{framework.HeldLabel: group}
		e.createPod(ctx, t, pod)
	}
	want := framework.HeldPrefix + "no GPU has 76800 MiB free; the largest free is 71680 MiB on " + node
	e.held().WaitHeld(ctx, t, time.Minute, held, want)

	// A filler freed releases the first held pod, placed by the other
	// extender.
	order := e.held().First(ctx, t, 3)
	e.deletePod(ctx, t, fillers[0])
	e.waitBound(ctx, t, order[0])
	// The other filler freed releases the second before the first's room
	// would have expired (cycleTimeout, 30 s), had the leader not heard
	// that the first was placed.
	e.deletePod(ctx, t, fillers[1])
	framework.WaitFor(t, 20*time.Second, order[1]+" released", func() (bool, string) {
		pod, err := cp.Kube.CoreV1().Pods(namespace).Get(ctx, order[1], metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return !hasFitGate(pod), "told " + framework.HeldWhy(pod)
	})
	e.waitBound(ctx, t, order[1])
	e.held().CheckUnbound(ctx, t, held-2)
	e.checkGated(ctx, t, held-2)

	// The leader stops; the other takes over and releases none: no GPU
	// has freed.
	leader.stop()
	time.Sleep(5 * time.Second)
	e.checkGated(ctx, t, held-2)

	// A placed pod's room freed releases exactly the next pod in queue
	// order.
	e.deletePod(ctx, t, order[0])
	e.waitBound(ctx, t, order[2])
	e.held().CheckUnbound(ctx, t, held-3)
	e.checkGated(ctx, t, held-3)
	e.held().CheckNeverTried(ctx, t)
	e.checkNoOvercommit(ctx, t)
}

// waitFitGateLeader waits until an extender holds the fit gate's Lease.
func waitFitGateLeader(ctx context.Context, t *testing.T, cp *framework.ControlPlane) {
	t.Helper()
	framework.WaitFor(t, time.Minute, "an extender to lead the fit gate", func() (bool, string) {
		lease, err := cp.Kube.CoordinationV1().Leases(options.DefaultLeaseNamespace).Get(ctx, options.DefaultFitGateLeaseName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", "no holder"
	})
}

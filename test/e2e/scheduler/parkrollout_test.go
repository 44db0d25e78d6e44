package scheduler

import (
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/test/framework"
)

// leaderElection is a leader election among tessera-scheduler processes,
// quick to hand over.
const leaderElection = `
leaderElection:
  leaderElect: true
  leaseDuration: 6s
  renewDeadline: 4s
  retryPeriod: 1s
  resourceLock: leases
  resourceNamespace: kube-system
  resourceName: tessera-scheduler-rollout
`

// TestPluginParkingRollout rolls tessera-scheduler over, as a Deployment
// does, while dozens of pods are parked: a second replica that does not
// lead leaves them parked; once the first stops and the second leads, it
// judges them anew and leaves them parked; and a free then releases
// exactly the pods it holds, in queue order.
func TestPluginParkingRollout(t *testing.T) {
	const (
		group, node = "rollout", "rollout-1"
		parked      = 40
	)
	e := startPluginEnv(t)
	ctx := t.Context()
	e.scheduler.Stop()
	config := e.schedulerConfig + leaderElection
	old := e.cp.StartSchedulerBinary(t, e.schedulerBin, config)
	e.scheduler = old
	e.createPriorityClasses(ctx, t)
	e.addNode(ctx, t, node, group, 10, a100(0))
	// A 50 GiB filler leaves 30 GiB, too little for the 40 GiB pods.
	e.createPod(ctx, t, lowPod("filler", group, 51200))
	e.waitBound(ctx, t, "filler")
	e.createHeld(ctx, t, "parked", group, parked, 40960)
	want := framework.HeldPrefix + "no GPU has 40960 MiB free; the largest free is 30720 MiB on " + node
	e.held().WaitHeld(ctx, t, 2*time.Minute, parked, want)
	e.held().WaitParked(ctx, t, time.Minute, parked)

	// The new replica starts and does not lead.
	next := e.cp.StartSchedulerBinary(t, e.schedulerBin, config)
	time.Sleep(5 * time.Second)
	if n := e.held().Parked(ctx, t); n != parked {
		t.Fatalf("with a second replica waiting to lead, %d pods are parked, want %d", n, parked)
	}
	// The old one stops, handing the lease over.
	old.Stop()
	e.scheduler = next
	time.Sleep(10 * time.Second)
	if n := e.held().Parked(ctx, t); n != parked {
		t.Fatalf("after the new replica took over, %d pods are parked, want %d", n, parked)
	}

	// The filler's GPU freed holds two 40 GiB pods: the two first.
	first := e.held().First(ctx, t, 2)
	e.deletePod(ctx, t, "filler")
	for _, name := range first {
		e.waitBound(ctx, t, name)
	}
	e.held().CheckUnbound(ctx, t, parked-2)
	if n := e.held().Parked(ctx, t); n != parked-2 {
		t.Errorf("after the free %d pods are parked, want the %d still held", n, parked-2)
	}
	e.held().CheckNeverTried(ctx, t)
	e.checkNoOvercommit(ctx, t)
}

package gangfit

import (
	"testing"
	"time"
)

// TestFollowerHoldsButDoesNotDecide pins what a scheduler process that
// does not hold the gang-fit Lease does, as the old or new pod of a
// rollout: it decides no check and writes nothing, but holds the room of
// the Workloads already admitted, so that whichever process places the
// pods keeps it.
func TestFollowerHoldsButDoesNotDecide(t *testing.T) {
	f := newFixture(t)
	f.c.leading.Store(false)
	f.sync(t, f.setWorkload(t, "waiting", 1, 30000, statePending, 0))
	if len(f.applied) != 0 {
		t.Errorf("a follower wrote %+v", f.applied)
	}
	if got := f.view.GangHeld("uid-waiting/main"); got != 0 {
		t.Errorf("a follower held room for %d pods of a Workload not admitted", got)
	}
	f.sync(t, f.setWorkload(t, "admitted", 2, 30000, stateReady, time.Minute))
	if got := f.view.GangHeld("uid-admitted/main"); got != 2 {
		t.Errorf("a follower holds room for %d pods of an admitted Workload, want 2", got)
	}
	if len(f.applied) != 0 {
		t.Errorf("a follower wrote %+v", f.applied)
	}
}

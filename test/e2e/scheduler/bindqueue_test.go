package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/test/framework"
)

// TestPluginBindQueueOutlastsBindWait binds more pods to one node at once
// than its turns can serve within bindWaitTimeout: each bind waits its
// turn while the node's turns move, so every pod is bound at its first
// attempt, none is turned away with a bind wait timeout, and no GPU is
// over-committed.
func TestPluginBindQueueOutlastsBindWait(t *testing.T) {
	const (
		group, node = "bindqueue", "bindqueue-1"
		// Twenty 8 GiB slices fill the node's two GPUs.
		pods     = 20
		bindWait = 4 * time.Second
		// Each turn takes the simulated kubelet at least this long, so the
		// last pod's bind waits about twice bindWait for its turn, while a
		// turn stays well within it on a loaded machine.
		turn = 400 * time.Millisecond
	)
	e := startPluginEnvEdited(t, framework.Options{ControllerManager: true},
		map[string]string{"bindWaitTimeout: 25s": "bindWaitTimeout: " + bindWait.String()}, turn)
	ctx := t.Context()
	e.addNode(ctx, t, node, group, 10, a100(0), a100(0))
	var served []time.Time
	for _, name := range e.createSlices(ctx, t, "queued", group, pods) {
		e.waitBound(ctx, t, name)
		served = append(served, e.plugin.ServedAt(namespace, name))
		if events := e.events(ctx, name); strings.Contains(events, "FailedScheduling") {
			t.Errorf("%s was turned away before it was bound: %s", name, events)
		}
	}
	slices.SortFunc(served, func(a, b time.Time) int { return a.Compare(b) })
	span := served[len(served)-1].Sub(served[0])
	t.Logf("%d pods served one after another over %s, bindWaitTimeout %s", pods, span.Round(time.Millisecond), bindWait)
	if span <= bindWait {
		t.Errorf("the node served its %d pods within %s, the bind wait: the test did not queue binds past it", pods, span)
	}
	e.checkNoOvercommit(ctx, t)
	e.checkOneInFlight(t)
}

// TestPluginBindQueueLetsDeletedPodsGo deletes pods whose binds wait in
// their node's line: they leave it at once, so none takes a turn or
// writes a GPUAllocation, and the pods behind them are served.
func TestPluginBindQueueLetsDeletedPodsGo(t *testing.T) {
	const (
		group, node = "bindgone", "bindgone-1"
		pods, kept  = 20, 15
		turn        = 400 * time.Millisecond
	)
	e := startPluginEnvEdited(t, framework.Options{ControllerManager: true}, nil, turn)
	ctx := t.Context()
	e.addNode(ctx, t, node, group, 10, a100(0), a100(0))
	names := e.createSlices(ctx, t, "gone", group, pods)
	// Every pod holds its slice: the last ones wait seconds for their turns.
	e.waitHeldMiB(t, node, pods*8192)
	deleted := names[kept:]
	creates := make(chan int, 1)
	go func() { creates <- e.countAllocationCreates(ctx, t, deleted, time.Duration(pods)*turn+5*time.Second) }()
	for _, name := range deleted {
		e.deletePod(ctx, t, name)
	}
	for _, name := range names[:kept] {
		e.waitBound(ctx, t, name)
	}
	if n := <-creates; n != 0 {
		t.Errorf("%d GPUAllocations were written for the %d pods deleted while their binds waited, want none", n, len(deleted))
	}
	e.waitHeldMiB(t, node, kept*8192)
	e.checkNoOvercommit(ctx, t)
	e.checkOneInFlight(t)
}

// TestPluginBindQueueKeepsReservationsPastTheirAge queues binds on one node
// for longer than a reservation may stand without its GPUAllocation (twice
// bindWaitTimeout plus inFlightTTL): the orphan sweep keeps the
// reservations of binds still waiting their turn, so pods created
// meanwhile are not placed on the room those hold, and no GPU is
// over-committed.
func TestPluginBindQueueKeepsReservationsPastTheirAge(t *testing.T) {
	const (
		group, node = "bindold", "bindold-1"
		pods, late  = 20, 3
		// The line lasts 16 s; reservations older than 9 s are swept every
		// 5 s, so a sweep meets reservations past their age still queued.
		// A turn stays well within the bind wait and the time-to-live on a
		// loaded machine.
		turn = 800 * time.Millisecond
	)
	e := startPluginEnvEdited(t, framework.Options{ControllerManager: true},
		map[string]string{"bindWaitTimeout: 25s": "bindWaitTimeout: 3s\n          inFlightTTL: 3s"}, turn)
	ctx := t.Context()
	// Split 100 ways, the node's nvidia.com/gpu (200) outlasts its memory,
	// so that kube-scheduler's own count leaves the late pods to Tessera.
	e.addNode(ctx, t, node, group, 100, a100(0), a100(0))
	names := e.createSlices(ctx, t, "old", group, pods)
	e.waitHeldMiB(t, node, pods*8192)
	lateNames := e.createSlices(ctx, t, "late", group, late)
	// Long enough for the late pods' binds to have their turns, had they
	// been placed on room the sweep gave again.
	creates := e.countAllocationCreates(ctx, t, lateNames, time.Duration(pods+late)*turn+8*time.Second)
	for _, name := range names {
		e.waitBound(ctx, t, name)
	}
	if creates != 0 {
		t.Errorf("%d GPUAllocations were written for the %d pods created while the node's room was all reserved, want none", creates, late)
	}
	if held := e.heldMiB(t, node); held != pods*8192 {
		t.Errorf("tessera-scheduler holds %d MiB on %s, want %d", held, node, pods*8192)
	}
	e.checkNoOvercommit(ctx, t)
	e.checkOneInFlight(t)
}

// createSlices creates n pods named prefix-0 to prefix-(n-1), each asking
// for an 8 GiB slice of one GPU with 10% of its cores, and returns their
// names in order.
func (e *env) createSlices(ctx context.Context, t *testing.T, prefix, group string, n int) []string {
	t.Helper()
	slice := ctr{name: "main", count: 1, memory: 8192, core: 10}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
		e.createPod(ctx, t, gpuPod(names[i], group, nil, slice))
	}
	return names
}

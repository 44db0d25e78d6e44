package scaledra

import (
	"context"
	"time"

	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

// SteadyWindow is one window of DRA mode's steady state: with or without
// the node daemons running, with or without claims churning.
type SteadyWindow struct {
	// Daemons says whether every node's daemon ran; Churn whether claims
	// churned at --claim-churn.
	Daemons, Churn bool
	// Window is how long it was measured.
	Window time.Duration
	// Requests are what the node daemons sent in the window, ByKind by
	// verb and resource; Churned the claims created and deleted in it.
	Requests, Churned int64
	ByKind            meter.RequestCount
	// CPU is every process's CPU time in the window.
	CPU meter.CPUUsage
	// Load is the load average when the window began.
	Load string
}

// perSecond is a count or a CPU time per second of the window.
func (w SteadyWindow) perSecond(v float64) float64 { return v / w.Window.Seconds() }

// measureSteady measures four windows of --steady-window: nothing
// running, claims churning alone, then with every node's DRA daemon
// started (after a period and a half, and draDaemonSettle at least, once
// they only renew their Leases: settle) the daemons alone and the daemons
// with claims churning.
func measureSteady(ctx context.Context, r *harness.Runner, env *harness.ClusterEnv) ([]SteadyWindow, error) {
	o := r.Options
	kube, requests, err := harness.CountingClient(env, o.Nodes)
	if err != nil {
		return nil, err
	}
	churn := &claimChurn{kube: env.ControlPlane.Kube, rate: o.ClaimChurn}
	var windows []SteadyWindow
	measure := func(daemons, churning bool) error {
		w, err := steadyWindow(ctx, r, env, requests, churn, daemons, churning)
		windows = append(windows, w)
		return err
	}
	if err := measure(false, false); err != nil {
		return windows, err
	}
	if err := measure(false, true); err != nil {
		return windows, err
	}
	uids, err := nodeUIDs(ctx, env)
	if err != nil {
		return windows, err
	}
	daemonCtx, stop := context.WithCancel(ctx)
	wait := harness.StartFleet(daemonCtx, o.Nodes, o.HeartbeatPeriod, func(ctx context.Context, i int) {
		runDRADaemon(ctx, kube, o, i, uids[harness.NodeName(i)])
	})
	defer func() {
		stop()
		wait()
	}()
	klog.FromContext(ctx).Info("Started the DRA node daemons", "nodes", o.Nodes, "period", o.HeartbeatPeriod)
	if took, settled := settle(ctx, requests, max(o.HeartbeatPeriod*3/2, draDaemonSettle)); !settled {
		klog.FromContext(ctx).Info("Measuring the DRA node daemons before they settled", "after", took.Round(time.Second))
	}
	if err := ctx.Err(); err != nil {
		return windows, context.Cause(ctx)
	}
	if err := measure(true, false); err != nil {
		return windows, err
	}
	return windows, measure(true, true)
}

// steadyWindow measures one window, churning claims through it if asked
// to (from a second before it, so that the churn runs at its rate).
func steadyWindow(ctx context.Context, r *harness.Runner, env *harness.ClusterEnv, requests *meter.RequestTally, churn *claimChurn, daemons, churning bool) (SteadyWindow, error) {
	w := SteadyWindow{Daemons: daemons, Churn: churning, Window: r.Options.SteadyWindow}
	churnCtx, stopChurn := context.WithCancel(ctx)
	churned := make(chan error, 1)
	if churning {
		go func() { churned <- churn.run(churnCtx) }()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	} else {
		churned <- nil
	}
	w.Load = meter.LoadAverage()
	cpu, sent, done := meter.SampleCPU(env.Dir), requests.Count(), churn.done.Load()
	select {
	case <-ctx.Done():
	case <-time.After(w.Window):
	}
	w.CPU = meter.SampleCPU(env.Dir).Since(cpu)
	w.ByKind, w.Churned = requests.Count().Since(sent), churn.done.Load()-done
	w.Requests = int64(w.ByKind.Total)
	stopChurn()
	err := <-churned
	klog.FromContext(ctx).Info("Measured DRA steady state", "daemons", daemons, "churn", churning,
		"requests", w.Requests, "byKind", w.ByKind.String(), "churned", w.Churned, "cpu", w.CPU.String())
	if err == nil {
		err = context.Cause(ctx)
	}
	return w, err
}

package harness

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/nodestatus"
	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

// Heartbeats is what every node's device plugin heartbeating at its
// period cost the control plane and the extender, in steady state.
type Heartbeats struct {
	// Period is each node's heartbeat period; Window how long the steady
	// state was measured, after every node had beaten once.
	Period, Window time.Duration
	// Writes is how many requests the simulated device plugins sent in
	// the window.
	Writes int64
	// APIServer, Etcd and Extender are each process's CPU time in the window.
	APIServer, Etcd, Extender time.Duration
	// Load is the load average when the window began.
	Load string
}

// PerSecond is a count or a CPU time per second of the window.
func (h *Heartbeats) PerSecond(v float64) float64 { return v / h.Window.Seconds() }

// RunHeartbeats runs one device plugin heartbeat per node, each at the
// period, their starts spread over one period as a fleet's are, and
// measures the steady state for window once every node has beaten.
func RunHeartbeats(ctx context.Context, env *ClusterEnv, o *Options, extender *ExtenderProcess) (*Heartbeats, error) {
	logger := klog.FromContext(ctx)
	kube, requests, err := CountingClient(env, o.Nodes)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	wait := StartFleet(ctx, o.Nodes, o.HeartbeatPeriod, func(ctx context.Context, i int) {
		// The device plugin's heartbeat is its Lease; its GPUNode status
		// is written only when it changes, which it does not here.
		LeaseRenewer(kube, i, o.HeartbeatPeriod).Run(ctx)
	})
	defer func() {
		cancel()
		wait()
	}()
	// Every node has started and beaten once more after a period and a half.
	select {
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-time.After(o.HeartbeatPeriod * 3 / 2):
	}
	res := &Heartbeats{Period: o.HeartbeatPeriod, Window: o.SteadyWindow, Load: meter.LoadAverage()}
	before, writes := meter.SampleCPU(env.Dir), requests.Load()
	extenderBefore, err := extender.CPU()
	if err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-time.After(o.SteadyWindow):
	}
	used := meter.SampleCPU(env.Dir).Since(before)
	res.Writes = requests.Load() - writes
	extenderAfter, err := extender.CPU()
	if err != nil {
		return nil, err
	}
	res.APIServer, res.Etcd, res.Extender = used["kube-apiserver"], used["etcd"], extenderAfter-extenderBefore
	logger.Info("Measured heartbeats", "nodes", o.Nodes, "period", o.HeartbeatPeriod, "writes", res.Writes, "cpu", used)
	return res, nil
}

// CountingClient is a client for n simulated node daemons, its rate
// limits lifted, with a tally of every request it sends.
func CountingClient(env *ClusterEnv, n int) (kubernetes.Interface, *meter.RequestTally, error) {
	requests := meter.NewRequestTally()
	cfg := rest.CopyConfig(env.ControlPlane.Config)
	cfg.QPS, cfg.Burst = float32(n), n
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			requests.Add(r)
			return rt.RoundTrip(r)
		})
	})
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the node daemons' client: %w", err)
	}
	return kube, requests, nil
}

// StartFleet runs run for each of n nodes until ctx ends, their starts
// spread evenly over one period as a fleet's are. The returned wait
// returns once every run has, after ctx ended.
func StartFleet(ctx context.Context, n int, period time.Duration, run func(ctx context.Context, i int)) (wait func()) {
	var wg sync.WaitGroup
	for i := range n {
		delay := period * time.Duration(i) / time.Duration(n)
		wg.Go(func() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			run(ctx, i)
		})
	}
	return wg.Wait
}

// LeaseRenewer is the i-th node's device plugin heartbeat, through the
// device plugin's own code.
func LeaseRenewer(kube kubernetes.Interface, i int, period time.Duration) *nodestatus.LeaseRenewer {
	return nodestatus.NewLeaseRenewer(nodestatus.LeaseConfig{
		NodeName: NodeName(i), Namespace: gpuv1alpha1.DefaultNodeLeaseNamespace, Holder: FieldManager,
		Kube: kube, Clock: clock.RealClock{}, Period: period,
	})
}

// roundTripperFunc is a function as an http.RoundTripper.
type roundTripperFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Package scale is the bench's scale mode for the extender: its memory and
// its filter latency with many pods already placed.
package scale

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

// probePodName is the unscheduled pod whose filter calls the scale mode times.
const probePodName = "bench-probe"

// probeOrders is how many orders of the nodes the probes cycle through.
const probeOrders = 16

// ScaleResult is what the scale mode measured.
type ScaleResult struct {
	Nodes, GPUsPerNode, Pods int
	// LoadAtStart is the load average before the bench created anything;
	// Load when the extender started, after the bench's own burst of writes.
	LoadAtStart, Load string
	// SyncTime is from the extender's start to its /readyz answering ok.
	SyncTime time.Duration
	// QuietAfter is how long the probes waited, after the memory was read,
	// for the control plane to settle from the bench's writes; Quiet is
	// whether it had by then.
	QuietAfter time.Duration
	Quiet      bool
	// RSSAfterSync and PeakAfterSync are its memory a moment after it was ready.
	RSSAfterSync, PeakAfterSync int64
	// PeakAfterProbes is its peak memory after the filter and prioritize probes.
	PeakAfterProbes int64
	// PeakAfterScrape is its peak memory after one scrape of its /metrics,
	// whose per-GPU and per-allocation series are built at scrape time.
	PeakAfterScrape int64
	// HeapInuse is go_memstats_heap_inuse_bytes at the scrape.
	HeapInuse int64
	// MetricsBytes is the size of that scrape, /metrics and /metrics/state.
	MetricsBytes int
	// ScrapeCPU is the extender's CPU time for that scrape, garbage
	// collection included.
	ScrapeCPU time.Duration
	// Filter and Prioritize are the probe calls' round trips, measured by
	// the bench; FilterServer is the extender's own histogram.
	Filter, Prioritize, FilterServer meter.Quantiles
	// FilterCPU and PrioritizeCPU are the extender's CPU time per call,
	// garbage collection included; unlike latencies, contention for the
	// CPUs does not inflate them.
	FilterCPU, PrioritizeCPU time.Duration
	// Feasible is how many of the nodes the first filter call returned.
	Feasible int
	// APIRequests is what the extender asked the API server, up to the scrape.
	APIRequests meter.RequestCount
	// Heartbeats is the steady state with every node heartbeating; nil
	// when --heartbeat-period is 0.
	Heartbeats *harness.Heartbeats
}

// Run places o.Pods pods with their allocations directly through the
// API, then starts the extender and measures its memory and its filter
// latency for one more pod over every node.
func Run(ctx context.Context, r *harness.Runner) (*ScaleResult, error) {
	o := r.Options
	loadAtStart := meter.LoadAverage()
	env, err := harness.StartEnv(ctx, filepath.Join(r.Base, "scale"), r.ExtenderConfig.SchedulerName)
	if err != nil {
		return nil, err
	}
	defer env.Stop()
	probe, err := placeAll(ctx, env, o)
	if err != nil {
		return nil, err
	}
	res := &ScaleResult{Nodes: o.Nodes, GPUsPerNode: o.GPUsPerNode, Pods: o.Pods, LoadAtStart: loadAtStart, Load: meter.LoadAverage()}
	extender, err := startExtender(ctx, r, env, res)
	if err != nil {
		return nil, err
	}
	defer extender.Stop()
	lists := nodeOrders(o)
	if res.QuietAfter, res.Quiet, err = meter.Settled.Wait(ctx, env.Dir); err != nil {
		return nil, err
	}
	// The profiles cover the probes, filter first: with --probes in the
	// thousands they last for seconds.
	profiles := &harness.Profiler{Seconds: o.ProfileSeconds}
	profiles.Start(ctx, env, extender.URL)
	defer profiles.Wait()
	if err := measureProbes(ctx, o, extender, probe, lists, res); err != nil {
		return nil, err
	}
	if err := measureScrape(ctx, env, extender, res); err != nil {
		return nil, err
	}
	if o.HeartbeatPeriod > 0 {
		if res.Heartbeats, err = harness.RunHeartbeats(ctx, env, o, extender); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// placeAll creates the nodes and the placed pods, and the probe pod, which
// waits.
func placeAll(ctx context.Context, env *harness.ClusterEnv, o *harness.Options) (*corev1.Pod, error) {
	if err := harness.CreateNodes(ctx, env, o, harness.FormSlices); err != nil {
		return nil, err
	}
	if err := harness.PlacePods(ctx, env, o, harness.FormSlices); err != nil {
		return nil, err
	}
	probe, err := env.ControlPlane.Kube.CoreV1().Pods(harness.Namespace).Create(ctx,
		harness.NewPod(probePodName, env.SchedulerName, harness.DefaultMix()[0], harness.FormSlices), metav1.CreateOptions{FieldManager: harness.FieldManager})
	if err != nil {
		return nil, fmt.Errorf("creating the probe pod: %w", err)
	}
	return probe, nil
}

// startExtender starts the extender, times its sync and measures its
// memory once its informers' last events have settled.
func startExtender(ctx context.Context, r *harness.Runner, env *harness.ClusterEnv, res *ScaleResult) (*harness.ExtenderProcess, error) {
	o := r.Options
	started := time.Now()
	extender, err := harness.StartExtender(ctx, r.ExtenderBin, env.ExtenderKubeconfig, env.SchedulerName, env.Dir, o.ExtenderFlags(), o.ExtenderEnv)
	if err != nil {
		return nil, err
	}
	res.SyncTime = time.Since(started)
	klog.FromContext(ctx).Info("Extender ready", "after", res.SyncTime.Round(time.Millisecond), "load", res.Load)
	// Let the informers' last events settle before reading memory.
	select {
	case <-ctx.Done():
		extender.Stop()
		return nil, context.Cause(ctx)
	case <-time.After(2 * time.Second):
	}
	if res.RSSAfterSync, res.PeakAfterSync, err = extender.Memory(); err != nil {
		extender.Stop()
		return nil, err
	}
	return extender, nil
}

// nodeOrders are the lists of every node the probes send, in the orders
// kube-scheduler may hand them to an extender in.
func nodeOrders(o *harness.Options) [][]string {
	names := make([]string, o.Nodes)
	for i := range names {
		names[i] = harness.NodeName(i)
	}
	// Kube-scheduler lists the nodes in the order of its cache, which is
	// the order its informer delivered them in, then gathers them in a
	// different interleaving on every call.
	rng := rand.New(rand.NewPCG(uint64(o.Nodes), uint64(o.Pods)))
	rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	return schedulerOrders(names, meter.NumCPU(), probeOrders, rng)
}

// measureProbes sends the filter probes, then the prioritize probes over
// the feasible nodes, and measures the extender's CPU for each and its
// memory after them.
func measureProbes(ctx context.Context, o *harness.Options, extender *harness.ExtenderProcess, probe *corev1.Pod, lists [][]string, res *ScaleResult) error {
	cpu0, err := extender.CPU()
	if err != nil {
		return err
	}
	var feasible []string
	res.Filter, feasible, err = probeFilter(ctx, extender.URL, probe, lists, o.Probes)
	if err != nil {
		return err
	}
	cpu1, err := extender.CPU()
	if err != nil {
		return err
	}
	res.Feasible = len(feasible)
	if res.Prioritize, err = probePrioritize(ctx, extender.URL, probe, keepOrder(lists, feasible), o.Probes); err != nil {
		return err
	}
	cpu2, err := extender.CPU()
	if err != nil {
		return err
	}
	res.FilterCPU, res.PrioritizeCPU = (cpu1-cpu0)/time.Duration(o.Probes), (cpu2-cpu1)/time.Duration(o.Probes)
	_, res.PeakAfterProbes, err = extender.Memory()
	return err
}

// measureScrape scrapes the extender's metrics, measuring their size and
// the CPU and memory the scrape took, and counts the extender's API
// requests.
func measureScrape(ctx context.Context, env *harness.ClusterEnv, extender *harness.ExtenderProcess, res *ScaleResult) error {
	before, err := extender.CPU()
	if err != nil {
		return err
	}
	families, size, err := meter.ScrapeSized(ctx, extender.URL+"/metrics")
	if err != nil {
		return err
	}
	// The per-GPU state, on its own path; per-allocation series only
	// where the extender runs with --allocation-metrics.
	_, stateSize, err := meter.ScrapeSized(ctx, extender.URL+"/metrics/state")
	if err != nil {
		return err
	}
	size += stateSize
	after, err := extender.CPU()
	if err != nil {
		return err
	}
	res.MetricsBytes, res.ScrapeCPU = size, after-before
	res.FilterServer = meter.VerbQuantiles(families, meter.ExtenderDurationMetric)[harness.VerbFilter]
	if v, ok := meter.GaugeValue(families, meter.HeapInuseMetric); ok {
		res.HeapInuse = int64(v)
	}
	if _, res.PeakAfterScrape, err = extender.Memory(); err != nil {
		return err
	}
	if res.APIRequests, err = meter.CountRequestsInFile(env.AuditLog, meter.ExtenderUser); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Extender API requests", "total", res.APIRequests.Total, "byKind", res.APIRequests.String())
	return nil
}

// probeFilter sends n filter calls for the pod, over the nodes in each of
// lists in turn, and times each round trip. It returns the feasible nodes
// of the first.
func probeFilter(ctx context.Context, url string, pod *corev1.Pod, lists [][]string, n int) (meter.Quantiles, []string, error) {
	var feasible []string
	samples, err := probe(ctx, url+"/filter", pod, lists, n, func(answer []byte) error {
		var result extenderv1.ExtenderFilterResult
		if err := json.Unmarshal(answer, &result); err != nil {
			return err
		}
		if result.Error != "" {
			return fmt.Errorf("filter for the probe pod answered: %s", result.Error)
		}
		if feasible == nil && result.NodeNames != nil {
			feasible = *result.NodeNames
		}
		return nil
	})
	return samples, feasible, err
}

// probePrioritize sends n prioritize calls for the pod, over the nodes in
// each of lists in turn, and times each round trip.
func probePrioritize(ctx context.Context, url string, pod *corev1.Pod, lists [][]string, n int) (meter.Quantiles, error) {
	return probe(ctx, url+"/prioritize", pod, lists, n, func(answer []byte) error {
		var result extenderv1.HostPriorityList
		return json.Unmarshal(answer, &result)
	})
}

// probe posts ExtenderArgs for the pod n times, over the nodes of each of
// lists in turn, and times each round trip. An answer goes to check only
// when it differs from the one before for the same list: decoding
// thousands of names made the bench collect garbage after every call, on
// the CPUs it shares with the extender it times, and that showed in the
// extender's 99th percentile.
func probe(ctx context.Context, url string, pod *corev1.Pod, lists [][]string, n int, check func(answer []byte) error) (meter.Quantiles, error) {
	bodies := make([][]byte, len(lists))
	for i := range lists {
		body, err := json.Marshal(&extenderv1.ExtenderArgs{Pod: pod, NodeNames: &lists[i]})
		if err != nil {
			return meter.Quantiles{}, err
		}
		bodies[i] = body
	}
	samples := make([]time.Duration, 0, n)
	var answer bytes.Buffer
	last := make([][]byte, len(lists))
	for i := range n {
		k := i % len(bodies)
		took, err := post(ctx, url, bodies[k], &answer)
		if err != nil {
			return meter.Quantiles{}, err
		}
		if !bytes.Equal(answer.Bytes(), last[k]) {
			if err := check(answer.Bytes()); err != nil {
				return meter.Quantiles{}, fmt.Errorf("POST %s: %w", url, err)
			}
			last[k] = append(last[k][:0], answer.Bytes()...)
		}
		samples = append(samples, took)
	}
	return meter.SampleQuantiles(samples), nil
}

// post sends a JSON body, reads the 200 answer into answer, and returns
// the round trip's duration.
func post(ctx context.Context, url string, body []byte, answer *bytes.Buffer) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("POST %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	answer.Reset()
	_, err = answer.ReadFrom(resp.Body)
	took := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("POST %s: reading the answer: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("POST %s: %s: %s", url, resp.Status, answer.Bytes())
	}
	return took, nil
}

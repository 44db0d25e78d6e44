package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Verbs of the extender, the values of the verb label.
const (
	VerbFilter     = "filter"
	VerbPrioritize = "prioritize"
	VerbBind       = "bind"
	VerbPreempt    = "preempt"
)

// Results of a request, the values of the result label.
const (
	// ResultSuccess: the request did what was asked; for filter, at least one node fits.
	ResultSuccess = "success"
	// ResultUnschedulable: no node fits (filter), the node no longer fits (bind), or evicting no candidate's victims makes room (preempt).
	ResultUnschedulable = "unschedulable"
	// ResultInvalid: the request or the pod it names is malformed.
	ResultInvalid = "invalid"
	// ResultError: the extender could not answer, such as an API error or a timeout.
	ResultError = "error"
)

// Requests are the metrics of the extender's own requests.
type Requests struct {
	// Duration is the latency of each verb.
	Duration *prometheus.HistogramVec
	// Total counts requests by verb and result.
	Total *prometheus.CounterVec
	// BindQueueWait is how long binds waited for their node's in-flight allocation.
	BindQueueWait prometheus.Histogram
	// BindsWaiting is how many binds wait now for their node's in-flight
	// allocation: pods bound by kube-scheduler but held until the kubelet
	// has served the previous pod on the node.
	BindsWaiting prometheus.Gauge
}

// Native histograms: a scraper that asks for protobuf gets sparse buckets
// 10% apart besides the classic ones, at most 160 of them, halved when
// they would be more.
const (
	nativeBucketFactor    = 1.1
	nativeMaxBucketNumber = 160
)

// RequestDurationBuckets are the request latency histogram's upper bounds,
// in seconds: a millisecond apart from 1 to 6 ms, where filter and
// prioritize answer at thousands of nodes, so that their quantiles read
// closely there and the share of calls within 5 ms (docs/benchmark.md's
// target for filter) reads exactly; then coarser, up to the seconds a bind
// may wait for its node's previous allocation.
var RequestDurationBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008,
	0.01, 0.015, 0.02, 0.03, 0.05, 0.1, 0.2, 0.5, 1, 2, 5,
}

// NewRequests creates the request metrics and registers them with reg.
func NewRequests(reg prometheus.Registerer) (*Requests, error) {
	r := &Requests{
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace,
			Subsystem: "extender",
			Name:      "request_duration_seconds",
			Help:      "Latency of the extender's filter, prioritize, bind and preempt requests.",
			Buckets:   RequestDurationBuckets,

			NativeHistogramBucketFactor:    nativeBucketFactor,
			NativeHistogramMaxBucketNumber: nativeMaxBucketNumber,
		}, []string{"verb"}),
		Total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Subsystem: "extender",
			Name:      "requests_total",
			Help:      "Requests to the extender by verb and result.",
		}, []string{"verb", "result"}),
		BindQueueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace,
			Subsystem: "extender",
			Name:      "bind_queue_wait_seconds",
			Help:      "Time binds waited for the previous allocation on their node to be served.",
			Buckets:   prometheus.ExponentialBuckets(0.001, 2, 16),

			NativeHistogramBucketFactor:    nativeBucketFactor,
			NativeHistogramMaxBucketNumber: nativeMaxBucketNumber,
		}),
		BindsWaiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace,
			Subsystem: "extender",
			Name:      "binds_waiting",
			Help:      "Binds waiting now for the previous allocation on their node to be served by the kubelet.",
		}),
	}
	for _, c := range []prometheus.Collector{r.Duration, r.Total, r.BindQueueWait, r.BindsWaiting} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return r, nil
}

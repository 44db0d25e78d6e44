package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/status"
)

// AllocateMetrics counts and times the kubelet's Allocate calls.
type AllocateMetrics struct {
	requests *prometheus.CounterVec
	duration prometheus.Histogram
}

// NewAllocateMetrics returns the Allocate metrics, not yet registered.
func NewAllocateMetrics() *AllocateMetrics {
	return &AllocateMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tessera_deviceplugin_allocate_requests_total",
			Help: "Allocate calls from the kubelet, by result: OK or the gRPC error code.",
		}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tessera_deviceplugin_allocate_duration_seconds",
			Help:    "Time to answer the kubelet's Allocate calls, including the allocation's status write.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
	}
}

// ObserveAllocate records one call.
func (m *AllocateMetrics) ObserveAllocate(d time.Duration, err error) {
	m.requests.WithLabelValues(status.Code(err).String()).Inc()
	m.duration.Observe(d.Seconds())
}

// Collectors returns the metrics to register.
func (m *AllocateMetrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.requests, m.duration}
}

package admission

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Webhook names, the values of the "webhook" metric label.
const (
	WebhookMutate   = "mutate"
	WebhookValidate = "validate"
)

// Results of one review, the values of the "result" metric label.
const (
	// ResultAllowed is a pod admitted unchanged.
	ResultAllowed = "allowed"
	// ResultPatched is a pod admitted with a patch.
	ResultPatched = "patched"
	// ResultDenied is a pod refused for its request.
	ResultDenied = "denied"
	// ResultBadRequest is a review the webhook could not read.
	ResultBadRequest = "bad_request"
	// ResultError is a review the webhook failed to answer.
	ResultError = "error"
)

// Metrics count and time the reviews.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	warnings *prometheus.CounterVec
}

// NewMetrics registers the webhook's metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tessera_webhook_requests_total",
			Help: "Admission reviews answered, by webhook and result.",
		}, []string{"webhook", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tessera_webhook_request_duration_seconds",
			Help:    "Time to answer an admission review, from reading the body to writing the answer, by webhook and result.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5},
		}, []string{"webhook", "result"}),
		warnings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tessera_webhook_warnings_total",
			Help: "Admission warnings sent, by webhook.",
		}, []string{"webhook"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.warnings} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering webhook metrics: %w", err)
		}
	}
	// Every series exists from the start, so rates and alerts see zeros.
	for _, w := range []string{WebhookMutate, WebhookValidate} {
		for _, r := range []string{ResultAllowed, ResultPatched, ResultDenied, ResultBadRequest, ResultError} {
			m.requests.WithLabelValues(w, r)
		}
		m.warnings.WithLabelValues(w)
	}
	return m, nil
}

func (m *Metrics) observe(webhook, result string, took time.Duration, warnings int) {
	m.requests.WithLabelValues(webhook, result).Inc()
	m.duration.WithLabelValues(webhook, result).Observe(took.Seconds())
	if warnings > 0 {
		m.warnings.WithLabelValues(webhook).Add(float64(warnings))
	}
}

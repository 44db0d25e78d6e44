package certs

import (
	"github.com/prometheus/client_golang/prometheus"
)

// expiryCollector exports when the serving certificate expires, read at
// scrape time so that a reload shows at once.
type expiryCollector struct {
	src  Source
	desc *prometheus.Desc
}

var _ prometheus.Collector = (*expiryCollector)(nil)

// NewExpiryCollector returns a collector of the serving certificate's
// expiry time, for alerts that fire before it lapses.
func NewExpiryCollector(src Source) prometheus.Collector {
	return &expiryCollector{src: src, desc: prometheus.NewDesc(
		"tessera_webhook_serving_certificate_expiry_timestamp_seconds",
		"When the webhook's serving certificate expires, in seconds since the Unix epoch.",
		nil, nil,
	)}
}

// Describe sends the one metric's description.
func (c *expiryCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect sends the expiry of the current certificate, nothing before one is loaded.
func (c *expiryCollector) Collect(ch chan<- prometheus.Metric) {
	if leaf := c.src.Leaf(); leaf != nil {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(leaf.NotAfter.Unix()))
	}
}

// Package metrics holds the extender's Prometheus metrics: a collector that
// reads every GPU and allocation from the view at scrape time, and the
// latency histograms and counters of the extender's own requests. Nothing
// here registers with the default registry.
package metrics

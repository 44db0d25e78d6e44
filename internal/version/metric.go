package version

import (
	"github.com/prometheus/client_golang/prometheus"
)

// NewCollector returns the tessera_build_info gauge: always 1, with the
// build's identity as labels, so that a query can join any series on the
// version its binary runs (for example to follow a rollout).
func NewCollector(component string) prometheus.Collector {
	i := Get()
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "tessera_build_info",
		Help: "Always 1; the labels say which build of which Tessera component is running.",
		ConstLabels: prometheus.Labels{
			"component":  component,
			"version":    i.Version,
			"revision":   i.GitCommit,
			"build_date": i.BuildDate,
			"goversion":  i.GoVersion,
			"platform":   i.Platform,
		},
	}, func() float64 { return 1 })
}

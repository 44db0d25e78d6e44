package gatelift

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// register registers the fit gate's series on reg: the pods it holds
// gated, and the gates it lifted.
func (l *Lifter) register(reg prometheus.Registerer) error {
	held := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "tessera_fit_gate_held_pods",
		Help: "GPU pods the extender's fit gate holds gated: no live node could hold their GPUs now, or the pods ahead of them take that room.",
	}, func() float64 { return float64(l.queue.Holding()) })
	for _, c := range []prometheus.Collector{held, l.lifted} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("registering the fit gate's metrics: %w", err)
		}
	}
	return nil
}

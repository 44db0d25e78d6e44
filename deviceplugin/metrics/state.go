package metrics

import (
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// StateCollector exports, on a node in DRA mode, each GPU's capacity and
// what the ResourceClaims allocated on it hold, computed at scrape time.
// The series have the names and labels the scheduler extender exports for
// device-plugin nodes (its /metrics/state), so that dashboards and alerts
// read both kinds of node; the extender leaves DRA nodes out.
type StateCollector struct {
	node      string
	devices   func() []gpuv1alpha1.GPUDevice
	cordoned  func() []string
	allocated func() map[string]Usage
	families  []stateFamily
}

var _ prometheus.Collector = (*StateCollector)(nil)

// Usage is what the allocated claims hold of one GPU. The DRA driver
// (deviceplugin/dra) counts it from the claims; the collector only reads
// it.
type Usage struct {
	MemoryBytes, Cores, Shares int64
}

// stateFamily is one per-GPU series family and its value.
type stateFamily struct {
	desc  *prometheus.Desc
	value func(d gpuv1alpha1.GPUDevice, u Usage, cordoned bool) float64
}

// NewStateCollector returns the collector of the node's GPUs as published
// (after scaling), the GPUs the administrator cordoned, and what the
// allocated claims hold of each GPU by UUID.
func NewStateCollector(node string, devices func() []gpuv1alpha1.GPUDevice, cordoned func() []string, allocated func() map[string]Usage) *StateCollector {
	family := func(name, help string, value func(d gpuv1alpha1.GPUDevice, u Usage, cordoned bool) float64) stateFamily {
		return stateFamily{prometheus.NewDesc("tessera_gpu_"+name, help, gpuLabels, nil), value}
	}
	return &StateCollector{node: node, devices: devices, cordoned: cordoned, allocated: allocated, families: []stateFamily{
		family("memory_capacity_bytes", "Memory of the GPU that may be allocated, after the node daemon's scaling.",
			func(d gpuv1alpha1.GPUDevice, _ Usage, _ bool) float64 { return float64(d.MemoryMiB) * (1 << 20) }),
		family("memory_allocated_bytes", "Memory of the GPU held by the ResourceClaims allocated on it.",
			func(_ gpuv1alpha1.GPUDevice, u Usage, _ bool) float64 { return float64(u.MemoryBytes) }),
		family("cores_capacity", "Compute of the GPU that may be allocated, in percent of one GPU.",
			func(d gpuv1alpha1.GPUDevice, _ Usage, _ bool) float64 { return float64(d.Cores) }),
		family("cores_allocated", "Compute of the GPU held by the ResourceClaims allocated on it, in percent of one GPU.",
			func(_ gpuv1alpha1.GPUDevice, u Usage, _ bool) float64 { return float64(u.Cores) }),
		family("share_limit", "Number of allocations that may share the GPU at once.",
			func(d gpuv1alpha1.GPUDevice, _ Usage, _ bool) float64 { return float64(d.ShareLimit) }),
		family("shares_in_use", "Shares of the GPU held by the ResourceClaims allocated on it.",
			func(_ gpuv1alpha1.GPUDevice, u Usage, _ bool) float64 { return float64(u.Shares) }),
		family("healthy", "1 when the GPU is healthy, 0 when it reported an error.",
			func(d gpuv1alpha1.GPUDevice, _ Usage, _ bool) float64 {
				return boolValue(d.Health == gpuv1alpha1.GPUHealthy)
			}),
		family("cordoned", "1 when the administrator cordoned the GPU from new allocations.",
			func(_ gpuv1alpha1.GPUDevice, _ Usage, cordoned bool) float64 { return boolValue(cordoned) }),
	}}
}

// Describe sends the descriptors of every family.
func (c *StateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range c.families {
		ch <- f.desc
	}
}

// Collect writes every family for every GPU.
func (c *StateCollector) Collect(ch chan<- prometheus.Metric) {
	cordoned := c.cordoned()
	allocated := c.allocated()
	for _, d := range c.devices() {
		labels := []string{c.node, d.UUID, strconv.Itoa(int(d.Index)), d.Model}
		isCordoned := slices.Contains(cordoned, d.UUID)
		for _, f := range c.families {
			ch <- prometheus.MustNewConstMetric(f.desc, prometheus.GaugeValue, f.value(d, allocated[d.UUID], isCordoned), labels...)
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

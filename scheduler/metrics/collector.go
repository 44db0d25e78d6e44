package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

const namespace = "tessera"

const mib = 1 << 20

// Collector reports every GPU and allocation in the view as it is at
// scrape time, so a GPU or pod that is gone leaves no series behind.
type Collector struct {
	view *view.View

	memoryCapacity   *prometheus.Desc
	memoryAllocated  *prometheus.Desc
	coresCapacity    *prometheus.Desc
	coresAllocated   *prometheus.Desc
	shareLimit       *prometheus.Desc
	sharesInUse      *prometheus.Desc
	healthy          *prometheus.Desc
	cordoned         *prometheus.Desc
	heartbeat        *prometheus.Desc
	allocationMemory *prometheus.Desc
	allocationCores  *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a collector reading the view.
func NewCollector(v *view.View) *Collector {
	gpu := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "gpu", name), help,
			[]string{"node", "uuid", "index", "model"}, nil)
	}
	allocation := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "allocation", name), help,
			[]string{"namespace", "pod", "container", "uuid"}, nil)
	}
	return &Collector{
		view:            v,
		memoryCapacity:  gpu("memory_capacity_bytes", "Memory of the GPU that may be allocated, after the device plugin's scaling."),
		memoryAllocated: gpu("memory_allocated_bytes", "Memory of the GPU held by the pods placed on it."),
		coresCapacity:   gpu("cores_capacity", "Compute of the GPU that may be allocated, in percent of one GPU."),
		coresAllocated:  gpu("cores_allocated", "Compute of the GPU held by the pods placed on it, in percent of one GPU."),
		shareLimit:      gpu("share_limit", "Number of containers that may share the GPU at once."),
		sharesInUse:     gpu("shares_in_use", "Number of containers holding the GPU at once."),
		healthy:         gpu("healthy", "1 when the GPU is healthy, 0 when it reported an error."),
		cordoned:        gpu("cordoned", "1 when the administrator cordoned the GPU from new allocations."),
		heartbeat: prometheus.NewDesc(prometheus.BuildFQName(namespace, "gpunode", "heartbeat_timestamp_seconds"),
			"Time of the device plugin's last heartbeat, in seconds since the epoch.", []string{"node"}, nil),
		allocationMemory: allocation("memory_bytes", "GPU memory given to a container on one GPU."),
		allocationCores:  allocation("cores", "Compute given to a container on one GPU, in percent of one GPU; 0 means no limit."),
	}
}

// Describe sends every metric's description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.memoryCapacity, c.memoryAllocated, c.coresCapacity, c.coresAllocated,
		c.shareLimit, c.sharesInUse, c.healthy, c.cordoned, c.heartbeat,
		c.allocationMemory, c.allocationCores,
	} {
		ch <- d
	}
}

// Collect reads the view and sends the current value of every series. The
// series are built under the view's lock and sent after it is released, so
// a slow scrape does not hold up binds.
func (c *Collector) Collect(out chan<- prometheus.Metric) {
	var metrics []prometheus.Metric
	ch := appender{&metrics}
	allocations := map[allocationKey]allocationSum{}
	c.view.Each(func(n *view.Node) {
		if !n.Heartbeat.IsZero() {
			ch.add(prometheus.MustNewConstMetric(c.heartbeat, prometheus.GaugeValue, float64(n.Heartbeat.UnixNano())/1e9, n.Placement.Name))
		}
		for i := range n.Placement.Devices {
			c.collectDevice(ch, n.Placement.Name, &n.Placement.Devices[i])
		}
	}, func(p *view.Pod) {
		for _, ctr := range p.Containers {
			for _, d := range ctr.Devices {
				k := allocationKey{p.Namespace, p.Name, ctr.Name, d.UUID}
				sum := allocations[k]
				sum.memoryMiB += d.MemoryMiB
				sum.cores += d.Cores
				allocations[k] = sum
			}
		}
	})
	// Two pods of one name can hold GPUs for a moment (an orphaned
	// allocation and its successor); their series are summed, since a
	// scrape with a repeated series fails as a whole.
	for k, sum := range allocations {
		ch.add(prometheus.MustNewConstMetric(c.allocationMemory, prometheus.GaugeValue, float64(sum.memoryMiB)*mib, k[:]...))
		ch.add(prometheus.MustNewConstMetric(c.allocationCores, prometheus.GaugeValue, float64(sum.cores), k[:]...))
	}
	for _, m := range metrics {
		out <- m
	}
}

func (c *Collector) collectDevice(ch appender, node string, d *placement.Device) {
	labels := []string{node, d.UUID, strconv.Itoa(int(d.Index)), d.Model}
	gauge := func(desc *prometheus.Desc, v float64) {
		ch.add(prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...))
	}
	gauge(c.memoryCapacity, float64(d.MemoryMiB)*mib)
	gauge(c.memoryAllocated, float64(d.UsedMemoryMiB)*mib)
	gauge(c.coresCapacity, float64(d.Cores))
	gauge(c.coresAllocated, float64(d.UsedCores))
	gauge(c.shareLimit, float64(d.ShareLimit))
	gauge(c.sharesInUse, float64(d.UsedShares))
	gauge(c.healthy, boolValue(d.Healthy))
	gauge(c.cordoned, boolValue(d.Cordoned))
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// appender collects metrics into a slice.
type appender struct{ metrics *[]prometheus.Metric }

func (a appender) add(m prometheus.Metric) { *a.metrics = append(*a.metrics, m) }

// allocationKey is the label values of one allocation series.
type allocationKey [4]string

type allocationSum struct {
	memoryMiB int64
	cores     int32
}

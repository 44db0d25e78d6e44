package metrics

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

// scrapeTimeout bounds the NVML reads of one scrape.
const scrapeTimeout = 5 * time.Second

var (
	gpuLabels = []string{"node", "uuid", "index", "model"}

	memoryUsedDesc = prometheus.NewDesc("tessera_node_gpu_memory_used_bytes",
		"GPU memory in use, as the driver measures it.", gpuLabels, nil)
	memoryTotalDesc = prometheus.NewDesc("tessera_node_gpu_memory_total_bytes",
		"Physical GPU memory.", gpuLabels, nil)
	utilizationDesc = prometheus.NewDesc("tessera_node_gpu_utilization_ratio",
		"Fraction of the last sample period in which a kernel ran on the GPU.", gpuLabels, nil)
	podMemoryDesc = prometheus.NewDesc("tessera_node_gpu_pod_memory_used_bytes",
		"GPU memory used by the processes of one pod on one GPU.",
		[]string{"node", "uuid", "index", "namespace", "pod"}, nil)
)

// PIDResolver finds the pod of a process.
type PIDResolver interface {
	PodUID(pid uint32) (types.UID, error)
}

// Pods lists the node's pods.
type Pods interface {
	NodePods() ([]*corev1.Pod, error)
}

// Collector measures the node's GPUs at scrape time.
type Collector struct {
	node    string
	devices func() []gpu.Device
	usage   gpu.UsageReader
	procs   PIDResolver
	pods    Pods
	logger  klog.Logger
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a collector for the node's GPUs; devices gives their
// index and model.
func NewCollector(logger klog.Logger, node string, devices func() []gpu.Device, usage gpu.UsageReader, procs PIDResolver, pods Pods) *Collector {
	return &Collector{node: node, devices: devices, usage: usage, procs: procs, pods: pods, logger: logger}
}

// Describe sends the descriptors of every metric.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- memoryUsedDesc
	ch <- memoryTotalDesc
	ch <- utilizationDesc
	ch <- podMemoryDesc
}

// Collect measures the GPUs and maps their processes to pods.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(klog.NewContext(context.Background(), c.logger), scrapeTimeout)
	defer cancel()
	usage, err := c.usage.Usage(ctx)
	if err != nil {
		c.logger.Error(err, "Measuring GPUs")
		return
	}
	known := map[string]gpu.Device{}
	for _, d := range c.devices() {
		known[d.UUID] = d
	}
	podsByUID := c.podsByUID()
	for _, u := range usage {
		d, ok := known[u.UUID]
		if !ok {
			continue
		}
		index := strconv.Itoa(d.Index)
		labels := []string{c.node, d.UUID, index, d.Model}
		ch <- prometheus.MustNewConstMetric(memoryUsedDesc, prometheus.GaugeValue, float64(u.MemoryUsedBytes), labels...)
		ch <- prometheus.MustNewConstMetric(memoryTotalDesc, prometheus.GaugeValue, float64(u.MemoryTotalBytes), labels...)
		if u.Utilization >= 0 {
			ch <- prometheus.MustNewConstMetric(utilizationDesc, prometheus.GaugeValue, u.Utilization, labels...)
		}
		for pod, bytes := range c.podMemory(u.Processes, podsByUID) {
			ch <- prometheus.MustNewConstMetric(podMemoryDesc, prometheus.GaugeValue, float64(bytes), c.node, d.UUID, index, pod.Namespace, pod.Name)
		}
	}
}

// podMemory sums the GPU memory of each pod's processes. Processes outside
// pods, of pods the node does not know, or that exited are left out.
func (c *Collector) podMemory(procs []gpu.Process, podsByUID map[types.UID]*corev1.Pod) map[types.NamespacedName]uint64 {
	out := map[types.NamespacedName]uint64{}
	for _, p := range procs {
		uid, err := c.procs.PodUID(p.PID)
		if err != nil {
			c.logger.V(4).Info("Cannot map GPU process to a pod", "pid", p.PID, "err", err)
			continue
		}
		pod, ok := podsByUID[uid]
		if uid == "" || !ok {
			continue
		}
		out[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] += p.MemoryUsedBytes
	}
	return out
}

func (c *Collector) podsByUID() map[types.UID]*corev1.Pod {
	pods, err := c.pods.NodePods()
	if err != nil {
		c.logger.Error(err, "Listing the node's pods")
		return nil
	}
	out := make(map[types.UID]*corev1.Pod, len(pods))
	for _, p := range pods {
		out[p.UID] = p
	}
	return out
}

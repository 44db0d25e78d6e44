// Package dashboard tests deploy/grafana/tessera-dashboard.json against the
// metrics the daemons really export; Exported lists those metrics for the
// chart's alert rules too (test/helm).
package dashboard

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	dpmetrics "github.com/tessera-gpu/tessera/deviceplugin/metrics"
	"github.com/tessera-gpu/tessera/internal/version"
	schedmetrics "github.com/tessera-gpu/tessera/scheduler/metrics"
	"github.com/tessera-gpu/tessera/scheduler/quota"
	"github.com/tessera-gpu/tessera/scheduler/view"
	"github.com/tessera-gpu/tessera/webhook/admission"
	"github.com/tessera-gpu/tessera/webhook/certs"
)

// Metric is one metric family a daemon exports.
type Metric struct {
	// Labels are its label names.
	Labels []string
	// Histogram: its series are _bucket, _sum and _count.
	Histogram bool
}

// recorder is a prometheus.Registerer that keeps what is registered, so
// that the test sees the collectors a constructor registers itself.
type recorder struct{ collectors []prometheus.Collector }

func (r *recorder) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return nil
}
func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	r.collectors = append(r.collectors, cs...)
}
func (r *recorder) Unregister(prometheus.Collector) bool { return false }

var descPattern = regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)

// Exported builds every daemon's metrics the way the daemons do and reads
// their names and labels from their descriptions.
func Exported(t testing.TB) map[string]Metric {
	t.Helper()
	rec := &recorder{}
	if _, err := schedmetrics.NewRequests(rec); err != nil {
		t.Fatal(err)
	}
	if _, err := admission.NewMetrics(rec); err != nil {
		t.Fatal(err)
	}
	rec.MustRegister(dpmetrics.NewCollector(klog.Background(), "", nil, nil, nil, nil))
	rec.MustRegister(dpmetrics.NewAllocateMetrics().Collectors()...)
	rec.MustRegister(certs.NewExpiryCollector(nil))
	rec.MustRegister(version.NewCollector("extender"))

	out := map[string]Metric{}
	for _, c := range rec.collectors {
		_, isHistogram := c.(prometheus.Histogram)
		if _, ok := c.(*prometheus.HistogramVec); ok {
			isHistogram = true
		}
		ch := make(chan *prometheus.Desc, 64)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			m := descPattern.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read metric description %s", d)
			}
			labels := strings.FieldsFunc(m[2], func(r rune) bool { return r == ',' || r == ' ' })
			out[m[1]] = Metric{Labels: labels, Histogram: isHistogram}
		}
	}
	for name, m := range stateMetrics(t) {
		out[name] = m
	}
	if len(out) < 15 {
		t.Fatalf("found only %d metrics in the daemons: %v", len(out), out)
	}
	return out
}

// stateMetrics reads the extender's per-GPU, per-node, per-allocation and
// per-namespace families from its /metrics/state handler, which writes
// them without descriptors, for a view with one GPU and one allocation on
// it, in a namespace whose quota limits all three GPU resources (a hard
// series is written only for a resource some quota limits).
func stateMetrics(t testing.TB) map[string]Metric {
	t.Helper()
	v := view.New()
	hb := metav1.Now()
	gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	gn.Status.Devices = []gpuv1alpha1.GPUDevice{{UUID: "GPU-a", Model: "A100", MemoryMiB: 1024, Cores: 100, ShareLimit: 4, Health: gpuv1alpha1.GPUHealthy}}
	v.SetGPUNode(gn)
	v.SetLease(gn.Name, hb.Time)
	v.Place(&gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "a1"},
		Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: "u1", NodeName: "n1", Containers: []gpuv1alpha1.ContainerAllocation{
			{Name: "main", Kind: gpuv1alpha1.ContainerApp, Devices: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-a", MemoryMiB: 256}}},
		}},
	})
	rec := httptest.NewRecorder()
	// With the optional per-allocation series, which the dashboard shows
	// where the extender runs with --allocation-metrics.
	limit := func(hard int64) quota.Limit { return quota.Limit{Hard: hard, Set: true, Quota: "gpu"} }
	quotas := quota.Fixed{"ns": {MemoryMiB: limit(4096), Cores: limit(400), GPUs: limit(4)}}
	schedmetrics.NewState(v, schedmetrics.StateOptions{Allocations: true, Quotas: quotas}).Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics/state", nil))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parsing the extender's metrics: %v", err)
	}
	out := map[string]Metric{}
	for name, f := range families {
		var labels []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		out[name] = Metric{Labels: labels}
	}
	return out
}

// TesseraName matches Tessera's metric names in a PromQL expression; every
// metric Tessera exports starts with tessera_.
var TesseraName = regexp.MustCompile(`\btessera_[a-z0-9_]+\b`)

// Resolve returns the family a name in a query belongs to: itself, or for
// a histogram's _bucket, _sum and _count series, the histogram.
func Resolve(name string, metrics map[string]Metric) (string, bool) {
	if _, ok := metrics[name]; ok {
		return name, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base := strings.TrimSuffix(name, suffix)
		if m, ok := metrics[base]; ok && base != name && m.Histogram {
			return base, true
		}
	}
	return "", false
}

// Package dashboard tests deploy/grafana/tessera-dashboard.json against the
// metrics the daemons really export.
package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
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
	"github.com/tessera-gpu/tessera/scheduler/view"
	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/webhook/admission"
	"github.com/tessera-gpu/tessera/webhook/certs"
)

// metric is one metric family a daemon exports.
type metric struct {
	labels    []string
	histogram bool
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

// exported builds every daemon's metrics the way the daemons do and reads
// their names and labels from their descriptions.
func exported(t *testing.T) map[string]metric {
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

	out := map[string]metric{}
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
			out[m[1]] = metric{labels: labels, histogram: isHistogram}
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

// stateMetrics reads the extender's per-GPU, per-node and per-allocation
// families from its /metrics/state handler, which writes them without
// descriptors, for a view with one GPU and one allocation on it.
func stateMetrics(t *testing.T) map[string]metric {
	t.Helper()
	v := view.New()
	hb := metav1.Now()
	gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	gn.Status.LastHeartbeatTime = &hb
	gn.Status.Devices = []gpuv1alpha1.GPUDevice{{UUID: "GPU-a", Model: "A100", MemoryMiB: 1024, Cores: 100, ShareLimit: 4, Health: gpuv1alpha1.GPUHealthy}}
	v.SetGPUNode(gn)
	v.Place(&gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "a1"},
		Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: "u1", NodeName: "n1", Containers: []gpuv1alpha1.ContainerAllocation{
			{Name: "main", Kind: gpuv1alpha1.ContainerApp, Devices: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-a", MemoryMiB: 256}}},
		}},
	})
	rec := httptest.NewRecorder()
	// With the optional per-allocation series, which the dashboard shows
	// where the extender runs with --allocation-metrics.
	schedmetrics.NewState(v, schedmetrics.StateOptions{Allocations: true}).Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics/state", nil))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parsing the extender's metrics: %v", err)
	}
	out := map[string]metric{}
	for name, f := range families {
		var labels []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		out[name] = metric{labels: labels}
	}
	return out
}

// panel is the part of a Grafana panel the test reads.
type panel struct {
	ID      int     `json:"id"`
	Type    string  `json:"type"`
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
		RefID        string `json:"refId"`
	} `json:"targets"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
}

type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

func load(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "deploy", "grafana", "tessera-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("decoding the dashboard: %v", err)
	}
	return d
}

// tesseraName matches Tessera's metric names in a PromQL expression; every
// metric Tessera exports starts with tessera_.
var tesseraName = regexp.MustCompile(`\btessera_[a-z0-9_]+\b`)

// resolve returns the family a name in a query belongs to: itself, or for
// a histogram's _bucket, _sum and _count series, the histogram.
func resolve(name string, metrics map[string]metric) (string, bool) {
	if _, ok := metrics[name]; ok {
		return name, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base := strings.TrimSuffix(name, suffix)
		if m, ok := metrics[base]; ok && base != name && m.histogram {
			return base, true
		}
	}
	return "", false
}

// queries returns every PromQL expression of the dashboard: panel targets
// and template variable queries, each with where it is.
func queries(d dashboard) map[string][]string {
	out := map[string][]string{}
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				where := fmt.Sprintf("panel %q target %s", p.Title, tg.RefID)
				out[where] = []string{tg.Expr, tg.LegendFormat}
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(map[string]any); ok {
			out["variable "+v.Name] = []string{fmt.Sprint(q["query"]), ""}
		}
	}
	return out
}

func TestEveryQueriedMetricIsExported(t *testing.T) {
	metrics := exported(t)
	d := load(t)
	used := map[string]bool{}
	for where, q := range queries(d) {
		expr, legend := q[0], q[1]
		if strings.TrimSpace(expr) == "" {
			t.Errorf("%s has no query", where)
			continue
		}
		if strings.Count(expr, "(") != strings.Count(expr, ")") || strings.Count(expr, "{") != strings.Count(expr, "}") {
			t.Errorf("%s: unbalanced brackets in %s", where, expr)
		}
		names := tesseraName.FindAllString(expr, -1)
		if len(names) == 0 {
			t.Errorf("%s queries no Tessera metric: %s", where, expr)
		}
		labels := map[string]bool{"instance": true, "job": true}
		for _, name := range names {
			family, ok := resolve(name, metrics)
			if !ok {
				t.Errorf("%s queries %s, which no daemon exports", where, name)
				continue
			}
			used[family] = true
			for _, l := range metrics[family].labels {
				labels[l] = true
			}
			if metrics[family].histogram {
				labels["le"] = true
			}
		}
		// A legend or grouping that names a label the metrics lack shows
		// an empty string, not an error, so it is checked here.
		for _, m := range regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`).FindAllStringSubmatch(legend, -1) {
			if !labels[m[1]] {
				t.Errorf("%s: legend %q uses label %q, which none of %v has", where, legend, m[1], names)
			}
		}
		for _, m := range regexp.MustCompile(`\b(?:by|on|without)\s*\(([^)]*)\)`).FindAllStringSubmatch(expr, -1) {
			for _, l := range strings.Split(m[1], ",") {
				if l = strings.TrimSpace(l); l != "" && !labels[l] {
					t.Errorf("%s: groups by label %q, which none of %v has", where, l, names)
				}
			}
		}
	}
	// The issue asks for these: allocation against capacity, per-pod
	// slices, scheduling latency and failures.
	for _, need := range []string{
		"tessera_gpu_memory_capacity_bytes", "tessera_gpu_memory_allocated_bytes",
		"tessera_gpu_cores_capacity", "tessera_gpu_cores_allocated",
		"tessera_allocation_memory_bytes", "tessera_allocation_cores",
		"tessera_extender_request_duration_seconds", "tessera_extender_requests_total",
		"tessera_node_gpu_memory_used_bytes",
	} {
		if !used[need] {
			t.Errorf("the dashboard never shows %s", need)
		}
	}
	var unused []string
	for name := range metrics {
		if !used[name] {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	t.Logf("exported but not on the dashboard: %v", unused)
}

func TestDashboardStructure(t *testing.T) {
	d := load(t)
	if d.Title == "" || d.UID == "" {
		t.Errorf("title %q and uid %q must both be set", d.Title, d.UID)
	}
	ids := map[int]string{}
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if prev, dup := ids[p.ID]; dup {
				t.Errorf("panels %q and %q share id %d", prev, p.Title, p.ID)
			}
			ids[p.ID] = p.Title
			if p.Type != "row" {
				// The data source is a dashboard variable, so the import
				// works whatever the Prometheus data source is called.
				if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
					t.Errorf("panel %q does not use the ${datasource} variable", p.Title)
				}
				if len(p.Targets) == 0 {
					t.Errorf("panel %q has no query", p.Title)
				}
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	if len(ids) < 10 {
		t.Errorf("only %d panels", len(ids))
	}
}

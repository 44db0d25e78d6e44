package metrics

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

func testView() *view.View {
	v := view.New()
	hb := metav1.NewTime(time.Unix(1_700_000_000, 0))
	gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	gn.Spec.CordonedDevices = []string{"GPU-b"}
	gn.Status.Devices = []gpuv1alpha1.GPUDevice{
		{UUID: "GPU-a", Index: 0, Model: "A100", MemoryMiB: 1024, Cores: 100, ShareLimit: 4, Health: gpuv1alpha1.GPUHealthy},
		{UUID: "GPU-b", Index: 1, Model: "A100", MemoryMiB: 2048, Cores: 100, ShareLimit: 4, Health: gpuv1alpha1.GPUUnhealthy},
	}
	v.SetGPUNode(gn)
	v.SetLease(gn.Name, hb.Time)
	v.Place(&gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "a1"},
		Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: "u1", NodeName: "n1", Containers: []gpuv1alpha1.ContainerAllocation{
			{Name: "main", Kind: gpuv1alpha1.ContainerApp, Devices: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-a", MemoryMiB: 256, Cores: 30}}},
		}},
	})
	// A new pod of the same name holds GPUs before the old allocation is gone.
	v.Place(&gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "a2"},
		Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: "u2", NodeName: "n1", Containers: []gpuv1alpha1.ContainerAllocation{
			{Name: "main", Kind: gpuv1alpha1.ContainerApp, Devices: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-a", MemoryMiB: 128, Cores: 10}}},
		}},
	})
	return v
}

// stateText is what the state writes of v, allocations included.
func stateText(t *testing.T, v *view.View) string {
	t.Helper()
	return stateTextWith(t, v, StateOptions{Allocations: true})
}

func stateTextWith(t *testing.T, v *view.View, opts StateOptions) string {
	t.Helper()
	s := NewState(v, opts)
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	s.write(w, s.snapshot())
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// parse reads metrics in the text format as Prometheus would.
func parse(t *testing.T, r io.Reader) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		t.Fatalf("parsing metrics: %v", err)
	}
	return families
}

func TestState(t *testing.T) {
	want := `# HELP tessera_gpu_memory_capacity_bytes Memory of the GPU that may be allocated, after the device plugin's scaling.
# TYPE tessera_gpu_memory_capacity_bytes gauge
tessera_gpu_memory_capacity_bytes{index="0",model="A100",node="n1",uuid="GPU-a"} 1.073741824e+09
tessera_gpu_memory_capacity_bytes{index="1",model="A100",node="n1",uuid="GPU-b"} 2.147483648e+09
# HELP tessera_gpu_memory_allocated_bytes Memory of the GPU held by the pods placed on it.
# TYPE tessera_gpu_memory_allocated_bytes gauge
tessera_gpu_memory_allocated_bytes{index="0",model="A100",node="n1",uuid="GPU-a"} 4.02653184e+08
tessera_gpu_memory_allocated_bytes{index="1",model="A100",node="n1",uuid="GPU-b"} 0
# HELP tessera_gpu_cores_capacity Compute of the GPU that may be allocated, in percent of one GPU.
# TYPE tessera_gpu_cores_capacity gauge
tessera_gpu_cores_capacity{index="0",model="A100",node="n1",uuid="GPU-a"} 100
tessera_gpu_cores_capacity{index="1",model="A100",node="n1",uuid="GPU-b"} 100
# HELP tessera_gpu_cores_allocated Compute of the GPU held by the pods placed on it, in percent of one GPU.
# TYPE tessera_gpu_cores_allocated gauge
tessera_gpu_cores_allocated{index="0",model="A100",node="n1",uuid="GPU-a"} 40
tessera_gpu_cores_allocated{index="1",model="A100",node="n1",uuid="GPU-b"} 0
# HELP tessera_gpu_share_limit Number of containers that may share the GPU at once.
# TYPE tessera_gpu_share_limit gauge
tessera_gpu_share_limit{index="0",model="A100",node="n1",uuid="GPU-a"} 4
tessera_gpu_share_limit{index="1",model="A100",node="n1",uuid="GPU-b"} 4
# HELP tessera_gpu_shares_in_use Number of containers holding the GPU at once.
# TYPE tessera_gpu_shares_in_use gauge
tessera_gpu_shares_in_use{index="0",model="A100",node="n1",uuid="GPU-a"} 2
tessera_gpu_shares_in_use{index="1",model="A100",node="n1",uuid="GPU-b"} 0
# HELP tessera_gpu_healthy 1 when the GPU is healthy, 0 when it reported an error.
# TYPE tessera_gpu_healthy gauge
tessera_gpu_healthy{index="0",model="A100",node="n1",uuid="GPU-a"} 1
tessera_gpu_healthy{index="1",model="A100",node="n1",uuid="GPU-b"} 0
# HELP tessera_gpu_cordoned 1 when the administrator cordoned the GPU from new allocations.
# TYPE tessera_gpu_cordoned gauge
tessera_gpu_cordoned{index="0",model="A100",node="n1",uuid="GPU-a"} 0
tessera_gpu_cordoned{index="1",model="A100",node="n1",uuid="GPU-b"} 1
# HELP tessera_gpunode_heartbeat_timestamp_seconds Time the scheduler last saw the node's device plugin renew its Lease, its heartbeat, by the scheduler's clock, in seconds since the epoch.
# TYPE tessera_gpunode_heartbeat_timestamp_seconds gauge
tessera_gpunode_heartbeat_timestamp_seconds{node="n1"} 1.7e+09
# HELP tessera_allocation_memory_bytes GPU memory given to a container on one GPU.
# TYPE tessera_allocation_memory_bytes gauge
tessera_allocation_memory_bytes{container="main",namespace="ns",pod="p",uuid="GPU-a"} 4.02653184e+08
# HELP tessera_allocation_cores Compute given to a container on one GPU, in percent of one GPU; 0 means no limit.
# TYPE tessera_allocation_cores gauge
tessera_allocation_cores{container="main",namespace="ns",pod="p",uuid="GPU-a"} 40
`
	got := stateText(t, testView())
	if got != want {
		t.Errorf("state =\n%s\nwant\n%s", got, want)
	}
	if n := len(parse(t, strings.NewReader(got))); n != 11 {
		t.Errorf("parsed %d families, want 11", n)
	}
}

// TestStateWithoutAllocations pins that the per-allocation series are
// written only when asked for, and that the rest stays the same.
func TestStateWithoutAllocations(t *testing.T) {
	with := stateText(t, testView())
	without := stateTextWith(t, testView(), StateOptions{})
	cut := strings.Index(with, "# HELP tessera_allocation_")
	if cut < 0 {
		t.Fatalf("no allocation series with Allocations on:\n%s", with)
	}
	if without != with[:cut] {
		t.Errorf("state without allocations =\n%s\nwant\n%s", without, with[:cut])
	}
}

func TestStateForgetsWhatIsGone(t *testing.T) {
	v := testView()
	v.Release("u1")
	v.Release("u2")
	v.DeleteGPUNode("n1")
	if got := stateText(t, v); got != "" {
		t.Errorf("series left after every GPU and pod went:\n%s", got)
	}
}

func TestStateEscapesLabelValues(t *testing.T) {
	v := view.New()
	gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	model := "A100 \"SXM\" \\ 80GB\nrev 2"
	gn.Status.Devices = []gpuv1alpha1.GPUDevice{{UUID: "GPU-a", Model: model, MemoryMiB: 1024, Cores: 100, ShareLimit: 1}}
	v.SetGPUNode(gn)
	for _, f := range parse(t, strings.NewReader(stateText(t, v))) {
		for _, l := range f.GetMetric()[0].GetLabel() {
			if l.GetName() == "model" && l.GetValue() != model {
				t.Errorf("%s: model read back as %q, want %q", f.GetName(), l.GetValue(), model)
			}
		}
	}
}

// TestStateMatchesView parses the series of a view with many nodes and pods
// and checks each against the view.
func TestStateMatchesView(t *testing.T) {
	v := view.New()
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 20 {
		gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%02d", n)}}
		for i := range 8 {
			gn.Status.Devices = append(gn.Status.Devices, gpuv1alpha1.GPUDevice{UUID: fmt.Sprintf("GPU-%d-%d", n, i), Index: int32(i),
				Model: "H100", MemoryMiB: 81920, Cores: 100, ShareLimit: 10, Health: gpuv1alpha1.GPUHealthy})
		}
		v.SetGPUNode(gn)
		for p := range 10 {
			var devices []gpuv1alpha1.DeviceAllocation
			for _, i := range rng.Perm(8)[:1+rng.IntN(3)] {
				devices = append(devices, gpuv1alpha1.DeviceAllocation{UUID: fmt.Sprintf("GPU-%d-%d", n, i), Index: int32(i),
					MemoryMiB: int64(1 + rng.IntN(4000)), Cores: int32(rng.IntN(10))})
			}
			name := fmt.Sprintf("pod-%d-%d", n, p)
			v.Place(&gpuv1alpha1.GPUAllocation{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("a-" + name)},
				Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: types.UID(name), NodeName: gn.Name,
					Containers: []gpuv1alpha1.ContainerAllocation{{Name: "main", Kind: gpuv1alpha1.ContainerApp, Devices: devices}}},
			})
		}
	}
	families := parse(t, strings.NewReader(stateText(t, v)))

	series := map[string]float64{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			key := name
			for _, l := range m.GetLabel() {
				key += "," + l.GetValue()
			}
			if _, dup := series[key]; dup {
				t.Errorf("series %s repeated", key)
			}
			series[key] = m.GetGauge().GetValue()
		}
	}
	want := map[string]float64{}
	v.Each(func(n *view.Node) {
		for _, d := range n.Placement.Devices {
			labels := fmt.Sprintf(",%d,%s,%s,%s", d.Index, d.Model, n.Placement.Name, d.UUID)
			want["tessera_gpu_memory_capacity_bytes"+labels] = float64(d.MemoryMiB) * mib
			want["tessera_gpu_memory_allocated_bytes"+labels] = float64(d.UsedMemoryMiB) * mib
			want["tessera_gpu_cores_capacity"+labels] = float64(d.Cores)
			want["tessera_gpu_cores_allocated"+labels] = float64(d.UsedCores)
			want["tessera_gpu_share_limit"+labels] = float64(d.ShareLimit)
			want["tessera_gpu_shares_in_use"+labels] = float64(d.UsedShares)
			want["tessera_gpu_healthy"+labels] = 1
			want["tessera_gpu_cordoned"+labels] = 0
		}
	}, func(p *view.Pod) {
		for _, c := range p.Containers {
			for _, d := range c.Devices {
				labels := fmt.Sprintf(",%s,%s,%s,%s", c.Name, p.Namespace, p.Name, d.UUID)
				want["tessera_allocation_memory_bytes"+labels] = float64(d.MemoryMiB) * mib
				want["tessera_allocation_cores"+labels] = float64(d.Cores)
			}
		}
	})
	if len(series) != len(want) {
		t.Errorf("%d series, want %d", len(series), len(want))
	}
	for key, w := range want {
		if got, ok := series[key]; !ok || got != w {
			t.Errorf("%s = %v (present %v), want %v", key, got, ok, w)
		}
	}
}

func TestStateHandler(t *testing.T) {
	srv := httptest.NewServer(NewState(testView(), StateOptions{Allocations: true}).Handler())
	defer srv.Close()

	for _, encoding := range []string{"", "gzip"} {
		t.Run("encoding "+encoding, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			// Set explicitly, the header keeps the client from decompressing.
			req.Header.Set("Accept-Encoding", encoding)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if got := resp.Header.Get("Content-Encoding"); got != encoding {
				t.Errorf("Content-Encoding %q, want %q", got, encoding)
			}
			if ct := resp.Header.Get("Content-Type"); expfmt.ResponseFormat(resp.Header).FormatType() != expfmt.TypeTextPlain {
				t.Errorf("Content-Type %q is not the text format", ct)
			}
			var body io.Reader = resp.Body
			if encoding == "gzip" {
				if body, err = gzip.NewReader(resp.Body); err != nil {
					t.Fatal(err)
				}
			}
			families := parse(t, body)
			if len(families) != 11 {
				t.Errorf("served %d metric families, want the state's 11", len(families))
			}
			lint(t, families)
		})
	}
}

// TestRegistryHandler pins that /metrics negotiates its format: the text
// format by default, OpenMetrics and protobuf when asked, the latter with
// the request histograms' native buckets.
func TestRegistryHandler(t *testing.T) {
	registry := prometheus.NewRegistry()
	requests, err := NewRequests(registry)
	if err != nil {
		t.Fatal(err)
	}
	requests.Total.WithLabelValues(VerbFilter, ResultSuccess).Inc()
	requests.Duration.WithLabelValues(VerbFilter).Observe(0.001)
	requests.BindQueueWait.Observe(0.5)
	requests.BindsWaiting.Inc()
	srv := httptest.NewServer(RegistryHandler(registry))
	defer srv.Close()

	tests := []struct {
		name   string
		accept string
		want   expfmt.FormatType
	}{
		{"text by default", "", expfmt.TypeTextPlain},
		{"OpenMetrics", "application/openmetrics-text;version=1.0.0", expfmt.TypeOpenMetrics},
		{"protobuf", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited", expfmt.TypeProtoDelim},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Accept", tc.accept)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			format := expfmt.ResponseFormat(resp.Header)
			if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/openmetrics-text;") {
				// expfmt reads back only the OpenMetrics versions it writes.
				format = expfmt.NewFormat(expfmt.TypeOpenMetrics)
			}
			if format.FormatType() != tc.want {
				t.Fatalf("Content-Type %q, want format %v", resp.Header.Get("Content-Type"), tc.want)
			}
			body, _ := io.ReadAll(resp.Body)
			switch tc.want {
			case expfmt.TypeTextPlain:
				families := parse(t, bytes.NewReader(body))
				if len(families) != 4 {
					t.Errorf("served %d metric families, want the 4 request metrics", len(families))
				}
				lint(t, families)
			case expfmt.TypeOpenMetrics:
				if !bytes.HasSuffix(body, []byte("# EOF\n")) || !bytes.Contains(body, []byte("tessera_extender_binds_waiting 1")) {
					t.Errorf("not OpenMetrics with the request metrics:\n%s", body)
				}
			case expfmt.TypeProtoDelim:
				dec := expfmt.NewDecoder(bytes.NewReader(body), format)
				native := false
				for {
					var f dto.MetricFamily
					if err := dec.Decode(&f); err != nil {
						break
					}
					if f.GetName() == "tessera_extender_request_duration_seconds" {
						h := f.GetMetric()[0].GetHistogram()
						native = h.GetSchema() != 0 || len(h.GetPositiveSpan()) > 0
					}
				}
				if !native {
					t.Error("the request duration histogram has no native buckets in protobuf")
				}
			}
		})
	}
}

// lint runs promlint over families.
func lint(t *testing.T, families map[string]*dto.MetricFamily) {
	t.Helper()
	var list []*dto.MetricFamily
	for _, f := range families {
		list = append(list, f)
	}
	problems, err := promlint.NewWithMetricFamilies(list).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

func TestAcceptsGzip(t *testing.T) {
	tests := []struct {
		header string
		want   bool
	}{
		{"", false},
		{"gzip", true},
		{"deflate, gzip;q=1.0, *;q=0.5", true},
		{"gzip;q=0", false},
		{"identity", false},
		{"x-gzip", false},
	}
	for _, tc := range tests {
		h := http.Header{}
		h.Set("Accept-Encoding", tc.header)
		if got := acceptsGzip(h); got != tc.want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", tc.header, got, tc.want)
		}
	}
}

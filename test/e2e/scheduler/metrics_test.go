package scheduler

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// metricsMode is where one mode serves its metrics and the series of its
// own requests; both modes serve the same GPU and allocation state.
type metricsMode struct {
	name   string
	plugin bool
	// address is the listener that serves /metrics and /metrics/state.
	address func(e *env) string
	own     []string
}

// metricsModes are the extender's and tessera-scheduler's.
func metricsModes() []metricsMode {
	return []metricsMode{
		{name: "extender", address: func(e *env) string { return e.extender.addr }, own: []string{
			`tessera_extender_requests_total{result="success",verb="bind"}`,
			`tessera_extender_request_duration_seconds_bucket{verb="filter"`,
			`tessera_extender_bind_queue_wait_seconds_count`,
		}},
		// tessera-scheduler's plugin serves them on its metricsAddress,
		// beside kube-scheduler's secure port.
		{name: "plugin", plugin: true, address: func(e *env) string { return e.scheduler.MetricsAddress }, own: []string{
			`component="plugin"`,
		}},
	}
}

// testMetrics scrapes /metrics and /metrics/state of what places pods in
// e's mode: every name passes promlint, and the GPU, allocation (turned
// on) and the mode's own series are there.
func testMetrics(t *testing.T, e *env) {
	for _, mode := range metricsModes() {
		if mode.plugin != (e.scheduler != nil) {
			continue
		}
		addr := mode.address(e)
		if addr == "" {
			t.Fatalf("%s mode serves no metrics", mode.name)
		}
		var body string
		for _, path := range []string{"/metrics", "/metrics/state"} {
			b, err := httpGet("http://" + addr + path)
			if err != nil {
				t.Fatal(err)
			}
			body += b
		}
		problems, err := promlint.New(strings.NewReader(body)).Lint()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			if strings.HasPrefix(p.Metric, "tessera_") {
				t.Errorf("%s: %s", p.Metric, p.Text)
			}
		}
		for _, want := range append([]string{
			`tessera_gpu_memory_capacity_bytes{index="0",model="Tesla T4",node="shapes-t4",uuid="GPU-shapes-t4-0"} 1.610612736e+10`,
			`tessera_allocation_memory_bytes{container="main",namespace="default",pod="restart-000"`,
		}, mode.own...) {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	}
}

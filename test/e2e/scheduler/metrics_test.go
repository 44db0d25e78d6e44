package scheduler

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// testMetrics scrapes the running extender's /metrics and /metrics/state:
// every name passes promlint, and the GPU, allocation (turned on) and
// request series are there.
func testMetrics(t *testing.T, e *env) {
	var body string
	for _, path := range []string{"/metrics", "/metrics/state"} {
		b, err := httpGet("http://" + e.extender.addr + path)
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
	for _, want := range []string{
		`tessera_gpu_memory_capacity_bytes{index="0",model="Tesla T4",node="shapes-t4",uuid="GPU-shapes-t4-0"} 1.610612736e+10`,
		`tessera_allocation_memory_bytes{container="main",namespace="default",pod="restart-000"`,
		`tessera_extender_requests_total{result="success",verb="bind"}`,
		`tessera_extender_request_duration_seconds_bucket{verb="filter"`,
		`tessera_extender_bind_queue_wait_seconds_count`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

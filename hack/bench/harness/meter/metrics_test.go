package meter

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestScrapeVerbQuantiles reads a histogram by verb and a gauge from an
// endpoint in Prometheus's text format, as the extender serves them.
func TestScrapeVerbQuantiles(t *testing.T) {
	const exposition = `# HELP tessera_extender_request_duration_seconds Latency.
# TYPE tessera_extender_request_duration_seconds histogram
tessera_extender_request_duration_seconds_bucket{verb="filter",le="0.001"} 90
tessera_extender_request_duration_seconds_bucket{verb="filter",le="0.002"} 100
tessera_extender_request_duration_seconds_bucket{verb="filter",le="+Inf"} 100
tessera_extender_request_duration_seconds_sum{verb="filter"} 0.08
tessera_extender_request_duration_seconds_count{verb="filter"} 100
tessera_extender_request_duration_seconds_bucket{verb="bind",le="0.001"} 0
tessera_extender_request_duration_seconds_bucket{verb="bind",le="0.002"} 0
tessera_extender_request_duration_seconds_bucket{verb="bind",le="+Inf"} 4
tessera_extender_request_duration_seconds_sum{verb="bind"} 4
tessera_extender_request_duration_seconds_count{verb="bind"} 4
# HELP go_memstats_heap_inuse_bytes Heap in use.
# TYPE go_memstats_heap_inuse_bytes gauge
go_memstats_heap_inuse_bytes 1.048576e+07
`
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, exposition)
	}))
	defer server.Close()

	families, err := Scrape(context.Background(), server.URL)
	if err != nil {
		t.Fatal(err)
	}
	verbs := VerbQuantiles(families, ExtenderDurationMetric)
	tests := []struct {
		verb string
		want Quantiles
	}{
		{verb: "filter", want: Quantiles{P50: 555555, P99: 1900 * time.Microsecond, Count: 100}},
		// Every observation is above the last finite bound.
		{verb: "bind", want: Quantiles{P50: 2 * time.Millisecond, P99: 2 * time.Millisecond, Count: 4}},
	}
	for _, tt := range tests {
		got := verbs[tt.verb]
		if got.Count != tt.want.Count || (got.P50-tt.want.P50).Abs() > time.Microsecond || (got.P99-tt.want.P99).Abs() > time.Microsecond {
			t.Errorf("%s = %+v, want %+v", tt.verb, got, tt.want)
		}
	}
	if _, ok := verbs["prioritize"]; ok {
		t.Errorf("a verb without series has quantiles")
	}
	if heap, ok := GaugeValue(families, HeapInuseMetric); !ok || heap != 10485760 {
		t.Errorf("heap = %v, %v; want 10485760", heap, ok)
	}
}

func TestScrapeReportsAFailedEndpoint(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
	}))
	defer server.Close()
	if _, err := Scrape(context.Background(), server.URL); err == nil {
		t.Fatal("scrape of a failing endpoint succeeded")
	}
}

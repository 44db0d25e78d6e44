package meter

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metric names the bench reads from the extender.
const (
	ExtenderDurationMetric = "tessera_extender_request_duration_seconds"
	BindQueueWaitMetric    = "tessera_extender_bind_queue_wait_seconds"
	HeapInuseMetric        = "go_memstats_heap_inuse_bytes"
	heapAllocMetric        = "go_memstats_heap_alloc_bytes"
)

// Scrape reads and parses a Prometheus text endpoint.
func Scrape(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	families, _, err := ScrapeSized(ctx, url)
	return families, err
}

// ScrapeSized is scrape that also returns the size of the answer in bytes.
func ScrapeSized(ctx context.Context, url string) (map[string]*dto.MetricFamily, int, error) {
	return ScrapeWith(ctx, http.DefaultClient, url)
}

// ScrapeWith is scrapeSized through client.
func ScrapeWith(ctx context.Context, client *http.Client, url string) (map[string]*dto.MetricFamily, int, error) {
	body, err := HTTPGetWith(ctx, client, url)
	if err != nil {
		return nil, 0, fmt.Errorf("scraping: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, 0, fmt.Errorf("parsing the metrics of %s: %w", url, err)
	}
	return families, len(body), nil
}

// HTTPGet returns the body of a 200 answer to GET url.
func HTTPGet(ctx context.Context, url string) ([]byte, error) {
	return HTTPGetWith(ctx, http.DefaultClient, url)
}

// HTTPGetWith is httpGet through client.
func HTTPGetWith(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %.1024s", url, resp.Status, body)
	}
	return body, nil
}

// VerbQuantiles are the median and 99th percentile of a request-duration
// histogram with a verb label, by verb.
func VerbQuantiles(families map[string]*dto.MetricFamily, name string) map[string]Quantiles {
	out := map[string]Quantiles{}
	family, ok := families[name]
	if !ok {
		return out
	}
	for _, m := range family.GetMetric() {
		h := m.GetHistogram()
		if h == nil {
			continue
		}
		verb := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == "verb" {
				verb = l.GetValue()
			}
		}
		buckets := make([]Bucket, 0, len(h.GetBucket()))
		for _, b := range h.GetBucket() {
			buckets = append(buckets, Bucket{UpperBound: b.GetUpperBound(), CumulativeCount: b.GetCumulativeCount()})
		}
		out[verb] = histogramQuantiles(buckets, h.GetSampleCount())
	}
	return out
}

// HistogramOf is the median and 99th percentile of an unlabelled
// histogram, or zero if it is absent.
func HistogramOf(families map[string]*dto.MetricFamily, name string) Quantiles {
	return VerbQuantiles(families, name)[""]
}

// GaugeValue is the value of an unlabelled gauge, or false if it is absent.
func GaugeValue(families map[string]*dto.MetricFamily, name string) (float64, bool) {
	family, ok := families[name]
	if !ok || len(family.GetMetric()) == 0 {
		return 0, false
	}
	m := family.GetMetric()[0]
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue(), true
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue(), true
	}
	return 0, false
}

// CounterSum is the sum of every series of a counter, whatever its labels;
// 0 if it is absent.
func CounterSum(families map[string]*dto.MetricFamily, name string) float64 {
	var sum float64
	for _, v := range ValuesBy(families, name, "") {
		sum += v
	}
	return sum
}

// ValuesBy sums the series of a counter or gauge by the value of one label.
func ValuesBy(families map[string]*dto.MetricFamily, name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range families[name].GetMetric() {
		key := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				key = l.GetValue()
			}
		}
		switch {
		case m.GetCounter() != nil:
			out[key] += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			out[key] += m.GetGauge().GetValue()
		case m.GetUntyped() != nil:
			out[key] += m.GetUntyped().GetValue()
		}
	}
	return out
}

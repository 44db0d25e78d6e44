package meter

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// apiRequestsMetric counts every request kube-apiserver served, by verb,
// resource and subresource, whoever made it.
const apiRequestsMetric = "apiserver_request_total"

// writeVerbs are the verbs of apiRequestsMetric that change state.
func writeVerbs() []string { return []string{"POST", "PUT", "PATCH", "DELETE", "APPLY"} }

// APIWrites counts write requests by resource ("pods/binding",
// "resourceclaims/status", ...), from every client of the API server.
type APIWrites map[string]float64

// SampleAPIWrites reads kube-apiserver's request counter.
func SampleAPIWrites(ctx context.Context, kube kubernetes.Interface) (APIWrites, error) {
	body, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scraping kube-apiserver's /metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parsing kube-apiserver's /metrics: %w", err)
	}
	return writesOf(families[apiRequestsMetric]), nil
}

// writesOf sums the write requests of the counter by resource.
func writesOf(family *dto.MetricFamily) APIWrites {
	out := APIWrites{}
	for _, m := range family.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if !slices.Contains(writeVerbs(), labels["verb"]) {
			continue
		}
		key := labels["resource"]
		if sub := labels["subresource"]; sub != "" {
			key += "/" + sub
		}
		out[key] += m.GetCounter().GetValue()
	}
	return out
}

// Since is the writes made from before to w.
func (w APIWrites) Since(before APIWrites) APIWrites {
	out := APIWrites{}
	for k, v := range w {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// Total is every write counted.
func (w APIWrites) Total() float64 {
	var total float64
	for _, v := range w {
		total += v
	}
	return total
}

// PerPod lists the writes per pod by resource, the most first.
func (w APIWrites) PerPod(pods int) string {
	keys := keysByValue(w)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, w[k]/float64(pods)))
	}
	return strings.Join(parts, ", ")
}

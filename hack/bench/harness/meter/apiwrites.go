package meter

import (
	"bytes"
	"context"
	"fmt"
	"slices"

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
type APIWrites = Counts

// consistencyChecksMetric counts kube-apiserver's checks of its watch
// cache against etcd, by resource and result. Each check lists every
// object of the resource from etcd, every 5 to 7.5 minutes: at 240,000
// pods, a long list for a control plane pinned to one CPU.
const consistencyChecksMetric = "apiserver_storage_consistency_checks_total"

// SampleAPIWrites reads kube-apiserver's request counter.
func SampleAPIWrites(ctx context.Context, kube kubernetes.Interface) (APIWrites, error) {
	families, err := SampleAPIServer(ctx, kube)
	if err != nil {
		return nil, err
	}
	return WritesOf(families), nil
}

// SampleAPIServer reads kube-apiserver's metrics.
func SampleAPIServer(ctx context.Context, kube kubernetes.Interface) (map[string]*dto.MetricFamily, error) {
	body, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scraping kube-apiserver's /metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parsing kube-apiserver's /metrics: %w", err)
	}
	return families, nil
}

// WritesOf sums the write requests of kube-apiserver's request counter
// by resource.
func WritesOf(families map[string]*dto.MetricFamily) APIWrites {
	out := APIWrites{}
	for _, m := range families[apiRequestsMetric].GetMetric() {
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

// ConsistencyChecksOf counts kube-apiserver's checks of its watch cache
// against etcd by resource.
func ConsistencyChecksOf(families map[string]*dto.MetricFamily) Counts {
	return ValuesBy(families, consistencyChecksMetric, "resource")
}

package helm

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/quota"
	"github.com/tessera-gpu/tessera/test/dashboard"
)

// quotaAlert is the alert on a namespace near its GPU quota.
const quotaAlert = "TesseraNamespaceGPUQuotaNearLimit"

// TestQuotaAlert pins the alert on a namespace near its GPU quota: one
// rule per quota resource, each the namespace's used series over its hard
// series (the same family's pair, so a rule cannot compare memory with
// cores) against the configured fraction for the configured time, and
// annotations that name the namespace and, through the queries they run
// when the alert fires, the used and hard figures.
func TestQuotaAlert(t *testing.T) {
	tests := []struct {
		name      string
		warning   map[string]any
		threshold string
		forTime   string
	}{
		{name: "defaults", threshold: "0.9", forTime: "900s"},
		{name: "configured", warning: map[string]any{"threshold": 0.75, "for": "1h30m"}, threshold: "0.75", forTime: "5400s"},
		{name: "at the limit only", warning: map[string]any{"threshold": 1, "for": "30s"}, threshold: "1", forTime: "30s"},
	}
	metrics := dashboard.Exported(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			values := map[string]any{"enabled": true}
			if tt.warning != nil {
				values["quotaWarning"] = tt.warning
			}
			r := defaults()
			r.values = map[string]any{"metrics": map[string]any{"prometheusRule": values}}
			rules := quotaRules(t, r.mustTemplate(t))
			for _, resource := range gpurequest.QuotaResources {
				key := "requests." + string(resource)
				rule, ok := rules[key]
				if !ok {
					t.Errorf("no %s rule for %s: %v", quotaAlert, key, rules)
					continue
				}
				used, hard := quotaSeries(key)
				want := fmt.Sprintf("max by (namespace) (%s) / max by (namespace) (%s) >= %s", used, hard, tt.threshold)
				if rule["expr"] != want {
					t.Errorf("%s expr = %q, want %q", key, rule["expr"], want)
				}
				if rule["for"] != tt.forTime {
					t.Errorf("%s for = %v, want %s", key, rule["for"], tt.forTime)
				}
				if severity, _, _ := unstructured.NestedString(rule, "labels", "severity"); severity != "warning" {
					t.Errorf("%s severity = %q, want warning", key, severity)
				}
				for _, name := range []string{"summary", "description"} {
					text, _, _ := unstructured.NestedString(rule, "annotations", name)
					checkQuotaAnnotation(t, key+" "+name, text, used, hard, metrics)
				}
			}
			if len(rules) != len(gpurequest.QuotaResources) {
				t.Errorf("%d %s rules, want one for each of %v", len(rules), quotaAlert, gpurequest.QuotaResources)
			}
		})
	}
}

// quotaRules returns the rendered rules of the quota alert by the quota
// resource they label.
func quotaRules(t *testing.T, objs []*unstructured.Unstructured) map[string]map[string]any {
	t.Helper()
	rule := findOne(t, objs, "PrometheusRule", "")
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	out := map[string]map[string]any{}
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, x := range rules {
			x := x.(map[string]any)
			if x["alert"] != quotaAlert {
				continue
			}
			resource, _, _ := unstructured.NestedString(x, "labels", "resource")
			if _, dup := out[resource]; dup {
				t.Errorf("two %s rules for resource %q", quotaAlert, resource)
			}
			out[resource] = x
		}
	}
	return out
}

// quotaSeries returns the used and hard series of a quota key.
func quotaSeries(key string) (used, hard string) {
	switch key {
	case string(quota.KeyMemory):
		return "tessera_namespace_gpu_memory_used_bytes", "tessera_namespace_gpu_memory_hard_bytes"
	case string(quota.KeyCores):
		return "tessera_namespace_gpu_cores_used", "tessera_namespace_gpu_cores_hard"
	case string(quota.KeyGPUs):
		return "tessera_namespace_gpus_used", "tessera_namespace_gpus_hard"
	}
	return "", ""
}

// queryPattern is a query an annotation runs: a series of one namespace.
var queryPattern = regexp.MustCompile(`^max\((tessera_[a-z0-9_]+)\{namespace="team-a"\}\)$`)

// checkQuotaAnnotation runs an annotation's template as Prometheus does
// for a firing alert of namespace team-a at 0.93, with Prometheus'
// template functions answering each query with 42, and checks that it
// names the namespace, that a description gives the used and hard figures
// from queries of that namespace's series, and that every series queried
// is one the scheduler exports.
func checkQuotaAnnotation(t *testing.T, where, text, used, hard string, metrics map[string]dashboard.Metric) {
	t.Helper()
	type sample struct{ Value float64 }
	var queried []string
	funcs := template.FuncMap{
		"query": func(q string) ([]sample, error) {
			queried = append(queried, q)
			return []sample{{Value: 42}}, nil
		},
		"first":              func(s []sample) (sample, error) { return s[0], nil },
		"value":              func(s sample) float64 { return s.Value },
		"humanize1024":       func(v float64) string { return fmt.Sprintf("%gKi", v) },
		"humanizePercentage": func(v float64) string { return fmt.Sprintf("%g%%", v*100) },
	}
	// Prometheus defines these before an alert's template.
	tmpl, err := template.New(where).Funcs(funcs).Option("missingkey=error").
		Parse("{{$labels := .Labels}}{{$value := .Value}}" + text)
	if err != nil {
		t.Errorf("%s is not a template Prometheus can run: %v", where, err)
		return
	}
	var out strings.Builder
	data := struct {
		Labels map[string]string
		Value  float64
	}{map[string]string{"namespace": "team-a", "resource": "x"}, 0.93}
	if err := tmpl.Execute(&out, data); err != nil {
		t.Errorf("%s: %v", where, err)
		return
	}
	got := out.String()
	if !strings.Contains(got, "team-a") || !strings.Contains(got, "93%") {
		t.Errorf("%s names no namespace or fraction: %s", where, got)
	}
	for _, q := range queried {
		m := queryPattern.FindStringSubmatch(q)
		if m == nil {
			t.Errorf("%s queries %s, want max(<series>{namespace=\"team-a\"})", where, q)
			continue
		}
		if _, ok := dashboard.Resolve(m[1], metrics); !ok {
			t.Errorf("%s queries %s, which no daemon exports", where, m[1])
		}
	}
	if strings.HasSuffix(where, "description") {
		want := []string{fmt.Sprintf("max(%s{namespace=%q})", used, "team-a"), fmt.Sprintf("max(%s{namespace=%q})", hard, "team-a")}
		if !slices.Equal(queried, want) || strings.Count(got, "42") != 2 {
			t.Errorf("%s queries %v, want the used then the hard figure %v, both shown: %s", where, queried, want, got)
		}
	}
}

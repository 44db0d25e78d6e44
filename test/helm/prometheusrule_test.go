package helm

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tessera-gpu/tessera/test/dashboard"
)

// TestPrometheusRule pins that the alerts the issue asks for are there and
// that every Tessera series a rule reads is one a daemon exports, with the
// labels the rule groups by: a misspelt name would leave an alert silent.
func TestPrometheusRule(t *testing.T) {
	r := defaults()
	r.values = map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true, "compatibilityRules": true}}}
	objs := r.mustTemplate(t)
	rule := findOne(t, objs, "PrometheusRule", "")
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	metrics := dashboard.Exported(t)
	alerts, records := map[string]bool{}, map[string]bool{}
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, x := range rules {
			x := x.(map[string]any)
			expr, _ := x["expr"].(string)
			name, _ := x["alert"].(string)
			if name != "" {
				alerts[name] = true
			} else {
				name, _ = x["record"].(string)
				records[name] = true
			}
			names := dashboard.TesseraName.FindAllString(expr, -1)
			if len(names) == 0 {
				t.Errorf("%s reads no Tessera series: %s", name, expr)
			}
			labels := map[string]bool{"namespace": true, "pod": true, "job": true, "instance": true}
			for _, n := range names {
				family, ok := dashboard.Resolve(n, metrics)
				if !ok {
					t.Errorf("%s reads %s, which no daemon exports", name, n)
					continue
				}
				for _, l := range metrics[family].Labels {
					labels[l] = true
				}
			}
			for _, part := range strings.Split(expr, "by (")[1:] {
				group, _, _ := strings.Cut(part, ")")
				for _, l := range strings.Split(group, ",") {
					if l = strings.TrimSpace(l); !labels[l] {
						t.Errorf("%s groups by %q, which %v lack", name, l, names)
					}
				}
			}
		}
	}
	for _, want := range []string{"TesseraGPUNodeStale", "TesseraGPUUnhealthy", "TesseraWebhookCertificateExpiresSoon", "TesseraBindsFailing", "TesseraBindsWaitingOnInFlightAllocations", quotaAlert} {
		if !alerts[want] {
			t.Errorf("no alert %s", want)
		}
	}
	for _, want := range []string{"GPUDeviceMemoryLimit", "GPUDeviceMemoryAllocated", "GPUDeviceCoreLimit", "GPUDeviceCoreAllocated", "GPUDeviceSharedNum", "vGPUMemoryAllocated", "vGPUCoreAllocated", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_GPU_UTIL"} {
		if !records[want] {
			t.Errorf("no recording rule %s", want)
		}
	}

	// Off by default, as the ServiceMonitor is.
	if rules := find(defaults().mustTemplate(t), "PrometheusRule"); len(rules) != 0 {
		t.Errorf("%d PrometheusRules rendered by default, want none", len(rules))
	}
}

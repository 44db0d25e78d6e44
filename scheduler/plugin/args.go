package plugin

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tessera-gpu/tessera/scheduler/options"
)

// decodeArgs reads the plugin's arguments from its pluginConfig entry onto
// the defaults. They are the fields of the extender's configuration
// (deploy/scheduler/extender-config.yaml) that concern placement, the
// allocation protocol and the per-GPU metrics (pluginFields). Those of the
// extender's own server and client are refused, naming the field, since
// the plugin runs in kube-scheduler's and would ignore them; unknown fields
// are an error. Without metricsAddress the plugin serves no metrics: the
// extender's default address is its own.
func decodeArgs(obj runtime.Object) (*options.Config, error) {
	cfg := options.NewConfig()
	cfg.MetricsAddress = ""
	if obj != nil {
		u, ok := obj.(*runtime.Unknown)
		if !ok {
			return nil, fmt.Errorf("want arguments as YAML or JSON, got %T", obj)
		}
		parsed, err := options.Parse(u.Raw)
		if err != nil {
			return nil, err
		}
		names, err := onlyPluginFields(u.Raw)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(names, "metricsAddress") {
			parsed.MetricsAddress = ""
		}
		cfg = parsed
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// pluginFields are the fields of the extender's configuration the plugin
// reads. metricsAddress is the plugin's own listener for /metrics/state,
// /metrics, /healthz and /readyz, beside kube-scheduler's secure port.
func pluginFields() []string {
	return []string{
		"resourceNames", "defaultNodePolicy", "defaultGPUPolicy", "heartbeatMaxAge", "leaseNamespace",
		"bindWaitTimeout", "hamiCoreMissing", "inFlightTTL", "orphanSweepInterval",
		"metricsAddress", "allocationMetrics", "gangFit",
	}
}

// onlyPluginFields returns the fields data, a configuration options
// parsed, sets, and refuses those that only the extender uses.
func onlyPluginFields(data []byte) ([]string, error) {
	names, _, err := options.Fields(data)
	if err != nil {
		return nil, err
	}
	read := pluginFields()
	var extenderOnly []string
	for _, name := range names {
		if !slices.Contains(read, name) {
			extenderOnly = append(extenderOnly, name)
		}
	}
	if len(extenderOnly) == 0 {
		return names, nil
	}
	what, it := "field "+extenderOnly[0], "it"
	if len(extenderOnly) > 1 {
		what, it = "fields "+strings.Join(extenderOnly, ", "), "them"
	}
	return nil, fmt.Errorf("%s: only the extender uses %s (for its own server or API client); "+
		"the plugin runs inside kube-scheduler and would ignore %s, and reads only %s", what, it, it, strings.Join(read, ", "))
}

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
// (deploy/scheduler/extender-config.yaml) that concern placement and the
// allocation protocol (pluginFields). Those of the extender's own server,
// client and metrics are refused, naming the field, since the plugin runs
// in kube-scheduler's and would ignore them; unknown fields are an error.
func decodeArgs(obj runtime.Object) (*options.Config, error) {
	cfg := options.NewConfig()
	if obj != nil {
		u, ok := obj.(*runtime.Unknown)
		if !ok {
			return nil, fmt.Errorf("want arguments as YAML or JSON, got %T", obj)
		}
		parsed, err := options.Parse(u.Raw)
		if err != nil {
			return nil, err
		}
		if err := onlyPluginFields(u.Raw); err != nil {
			return nil, err
		}
		cfg = parsed
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// pluginFields are the fields of the extender's configuration the plugin
// reads.
func pluginFields() []string {
	return []string{
		"resourceNames", "defaultNodePolicy", "defaultGPUPolicy", "heartbeatMaxAge", "leaseNamespace",
		"bindWaitTimeout", "hamiCoreMissing", "inFlightTTL", "orphanSweepInterval",
	}
}

// onlyPluginFields refuses the fields of data, a configuration options
// parsed, that only the extender uses.
func onlyPluginFields(data []byte) error {
	names, _, err := options.Fields(data)
	if err != nil {
		return err
	}
	read := pluginFields()
	var extenderOnly []string
	for _, name := range names {
		if !slices.Contains(read, name) {
			extenderOnly = append(extenderOnly, name)
		}
	}
	if len(extenderOnly) == 0 {
		return nil
	}
	what, it := "field "+extenderOnly[0], "it"
	if len(extenderOnly) > 1 {
		what, it = "fields "+strings.Join(extenderOnly, ", "), "them"
	}
	return fmt.Errorf("%s: only the extender uses %s (for its own server, API client or metrics); "+
		"the plugin runs inside kube-scheduler and would ignore %s, and reads only %s", what, it, it, strings.Join(read, ", "))
}

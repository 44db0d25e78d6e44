package plugin

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tessera-gpu/tessera/scheduler/options"
)

// decodeArgs reads the plugin's arguments from its pluginConfig entry onto
// the defaults. They are the extender's configuration (deploy/scheduler/
// extender-config.yaml): the fields that concern placement and the
// allocation protocol apply (resourceNames, the default policies,
// heartbeatMaxAge, bindWaitTimeout, inFlightTTL, orphanSweepInterval);
// those of the extender's own server and client do not, since the plugin
// runs in kube-scheduler's. Unknown fields are an error.
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
		cfg = parsed
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

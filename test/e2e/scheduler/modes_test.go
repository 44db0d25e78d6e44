package scheduler

import "testing"

// inBothModes runs test as a subtest in extender mode (startEnv) and then
// in plugin mode (startPluginEnv), each on an environment of its own.
func inBothModes(t *testing.T, test func(*testing.T, *env)) {
	for _, mode := range []struct {
		name  string
		start func(*testing.T) *env
	}{{"extender", startEnv}, {"plugin", startPluginEnv}} {
		t.Run(mode.name, func(t *testing.T) { test(t, mode.start(t)) })
	}
}

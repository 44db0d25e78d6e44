package options

import (
	"path/filepath"
	"runtime"
	"testing"
)

// TestShippedConfigIsTheDefaults loads deploy/scheduler/extender-config.yaml,
// which documents the defaults, and checks it is valid and says what the
// code does.
func TestShippedConfigIsTheDefaults(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	c, err := LoadFile(filepath.Join(filepath.Dir(file), "..", "..", "deploy", "scheduler", "extender-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if *c != *NewConfig() {
		t.Errorf("shipped configuration %+v differs from the defaults %+v", c, NewConfig())
	}
}

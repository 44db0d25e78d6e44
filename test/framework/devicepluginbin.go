package framework

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// BuildDevicePlugin builds Tessera's node daemon (./deviceplugin) for the
// test and returns the binary's path, for tests that run it as a process
// of its own so that they can kill it as a crash would.
func BuildDevicePlugin(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tessera-device-plugin")
	cmd := exec.Command("go", "build", "-o", bin, "./deviceplugin")
	cmd.Dir = RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the device plugin: %v\n%s", err, out)
	}
	return bin
}

package framework

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// KeepLogsEnv names a directory where a failed test's control plane keeps
// the whole log of each of its processes (kube-apiserver, kube-scheduler,
// tessera-scheduler, ...), in a folder named after the test: the test's
// own output shows only their last lines, and the test's directory goes
// when it ends.
const KeepLogsEnv = "TESSERA_TEST_LOGS"

// keepLogs copies the processes' logs under KeepLogsEnv, when it is set.
func (cp *ControlPlane) keepLogs(t testing.TB) {
	root := os.Getenv(KeepLogsEnv)
	if root == "" {
		return
	}
	dir := filepath.Join(root, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("keeping the logs: %v", err)
		return
	}
	for _, p := range cp.procs {
		b, err := os.ReadFile(p.logFile)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, filepath.Base(p.logFile)), b, 0o644)
		}
		if err != nil {
			t.Logf("keeping the log of %s: %v", p.name, err)
		}
	}
	t.Logf("kept the logs of the control plane's processes in %s", dir)
}

package framework

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// BinDirEnv names the directory that holds etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler. When it is unset the framework
// asks hack/build-controlplane.sh, which builds them once and caches them.
const BinDirEnv = "TESSERA_CONTROLPLANE_BIN"

var binDir = sync.OnceValues(func() (string, error) {
	if dir := os.Getenv(BinDirEnv); dir != "" {
		return dir, checkBinaries(dir)
	}
	script := filepath.Join(RepoRoot(), "hack", "build-controlplane.sh")
	cmd := exec.Command(script)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building the control plane with %s: %w", script, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	dir := lines[len(lines)-1]
	return dir, checkBinaries(dir)
})

func checkBinaries(dir string) error {
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("control-plane binary %s missing in %s (run hack/build-controlplane.sh): %w", name, dir, err)
		}
	}
	return nil
}

// RepoRoot returns the root of the Tessera source tree.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

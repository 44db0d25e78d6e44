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
	dir, err := build("build-controlplane.sh")
	if err != nil {
		return "", fmt.Errorf("building the control plane: %w", err)
	}
	return dir, checkBinaries(dir)
})

// build runs a hack/ build script and returns the directory it prints on
// its last line.
func build(script string) (string, error) {
	path := filepath.Join(RepoRoot(), "hack", script)
	cmd := exec.Command(path)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("running %s: %w", path, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

// SchedulerBinEnv names the directory that holds tessera-scheduler. When
// it is unset the framework asks hack/build-scheduler.sh, which builds it
// once per change of its sources and caches it.
const SchedulerBinEnv = "TESSERA_SCHEDULER_BIN"

// SchedulerPluginBinary returns the path of tessera-scheduler, kube-scheduler
// with Tessera's plugin compiled in.
var SchedulerPluginBinary = sync.OnceValues(func() (string, error) {
	dir := os.Getenv(SchedulerBinEnv)
	if dir == "" {
		var err error
		if dir, err = build("build-scheduler.sh"); err != nil {
			return "", fmt.Errorf("building tessera-scheduler: %w", err)
		}
	}
	bin := filepath.Join(dir, "tessera-scheduler")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("tessera-scheduler missing in %s (run hack/build-scheduler.sh): %w", dir, err)
	}
	return bin, nil
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

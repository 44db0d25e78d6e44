package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// SchedulerReadyTimeout bounds how long a test waits for a scheduler to
// become ready on the small clusters tests make.
const SchedulerReadyTimeout = 2 * time.Minute

// StartScheduler runs kube-scheduler with the given KubeSchedulerConfiguration
// (YAML) for the rest of the test. The framework points its client at this
// control plane with raised rate limits (kube-scheduler's default of 50 QPS
// would throttle any load) and turns leader election off unless the
// configuration sets it.
func (cp *ControlPlane) StartScheduler(t testing.TB, configYAML string) *Process {
	t.Helper()
	return cp.StartSchedulerBinary(t, cp.kubeScheduler(), configYAML)
}

// StartSchedulerBinary is StartScheduler with another build of
// kube-scheduler, such as tessera-scheduler (SchedulerPluginBinary).
func (cp *ControlPlane) StartSchedulerBinary(t testing.TB, bin, configYAML string) *Process {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), SchedulerReadyTimeout)
	defer cancel()
	p, err := cp.StartSchedulerBinaryProcess(ctx, bin, configYAML)
	if err != nil {
		t.Fatalf("starting %s: %v", filepath.Base(bin), err)
	}
	stopOnCleanup(t, p)
	return p
}

// StartSchedulerProcess is StartScheduler for callers that are not tests.
// The process is also stopped by Stop.
func (cp *ControlPlane) StartSchedulerProcess(ctx context.Context, configYAML string) (*Process, error) {
	return cp.StartSchedulerBinaryProcess(ctx, cp.kubeScheduler(), configYAML)
}

// kubeScheduler is the path of the control plane's kube-scheduler.
func (cp *ControlPlane) kubeScheduler() string { return filepath.Join(cp.bin, "kube-scheduler") }

// StartSchedulerBinaryProcess is StartSchedulerBinary for callers that are
// not tests. The process is also stopped by Stop. A Tessera plugin
// metrics listener in the configuration moves to a free loopback port, as
// the secure port does, so that schedulers started at once do not contend
// for one port; Process.MetricsAddress says where. flags are added to its
// command line.
//
// It returns once the scheduler's /readyz answers ok: its informers hold
// the cluster and its event handlers have seen all of it. That takes
// longer the larger the cluster (kube-scheduler lists every pod), so ctx
// bounds the wait; it ends at once if the process exits.
func (cp *ControlPlane) StartSchedulerBinaryProcess(ctx context.Context, bin, configYAML string, flags ...string) (*Process, error) {
	config := map[string]any{}
	if err := yaml.Unmarshal([]byte(configYAML), &config); err != nil {
		return nil, fmt.Errorf("decoding the scheduler configuration: %w", err)
	}
	config["clientConnection"] = map[string]any{"kubeconfig": cp.KubeconfigPath, "qps": 5000, "burst": 10000}
	if _, ok := config["leaderElection"]; !ok {
		config["leaderElection"] = map[string]any{"leaderElect": false}
	}
	metricsAddress, err := movePluginMetrics(config)
	if err != nil {
		return nil, err
	}
	data, err := yaml.Marshal(config)
	if err != nil {
		return nil, err
	}
	file, err := os.CreateTemp(cp.Dir, "kube-scheduler-config-*.yaml")
	if err != nil {
		return nil, err
	}
	if _, err := file.Write(data); err != nil {
		return nil, err
	}
	if err := file.Close(); err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--config=" + file.Name(),
		"--authentication-kubeconfig=" + cp.KubeconfigPath,
		"--authorization-kubeconfig=" + cp.KubeconfigPath,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
	}
	if cp.gangs {
		args = append(args, gangsFeatureGates)
	}
	args = append(args, flags...)
	p, err := cp.startBinary(bin, filepath.Base(bin), args...)
	if err != nil {
		return nil, err
	}
	if err := p.waitServing(ctx, port); err != nil {
		p.Stop()
		return nil, fmt.Errorf("%s did not become ready: %w", filepath.Base(bin), err)
	}
	p.MetricsAddress = metricsAddress
	return p, nil
}

// movePluginMetrics points the Tessera plugin's metricsAddress, where the
// configuration sets one, at a free loopback port and returns that
// address; empty where none is set.
func movePluginMetrics(config map[string]any) (string, error) {
	profiles, _ := config["profiles"].([]any)
	for _, p := range profiles {
		profile, _ := p.(map[string]any)
		entries, _ := profile["pluginConfig"].([]any)
		for _, e := range entries {
			entry, _ := e.(map[string]any)
			args, _ := entry["args"].(map[string]any)
			if entry["name"] != "Tessera" || args["metricsAddress"] == nil || args["metricsAddress"] == "" {
				continue
			}
			port, err := FreePort()
			if err != nil {
				return "", err
			}
			addr := "127.0.0.1:" + strconv.Itoa(port)
			args["metricsAddress"] = addr
			return addr, nil
		}
	}
	return "", nil
}

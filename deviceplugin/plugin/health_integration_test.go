package plugin

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2/ktesting"

	"github.com/tessera-gpu/tessera/deviceplugin/config"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/test/nodeagent"
)

// waitProbes waits until both probes answer status, the failing ones
// naming want.
func waitProbes(ctx context.Context, t *testing.T, addr string, status int, want string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, path := range []string{"/healthz", "/readyz"} {
			got, body := framework.HTTPGet(ctx, "http://"+addr+path)
			last = path + ": " + body
			if got != status || !strings.Contains(body, want) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("probes never answered %d with %q; last %s", status, want, last)
	}
}

// startPlugin runs a plugin on simulated GPUs (or backend) with its probes
// on a free port until the test ends, and returns their address.
func startPlugin(ctx context.Context, t *testing.T, cp *framework.ControlPlane, node, pluginDir string, backend gpu.Backend) string {
	t.Helper()
	gpuFile := filepath.Join(t.TempDir(), "gpus.yaml")
	if err := os.WriteFile(gpuFile, []byte(simulatedGPUs), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.NodeName = node
	cfg.SimulatedGPUFile = gpuFile
	cfg.PluginDir = pluginDir
	cfg.MetricsAddress = "127.0.0.1:0"
	cfg.HeartbeatPeriod = metav1.Duration{Duration: time.Second}
	p, stop := runPlugin(ctx, t, cp, cfg, backend)
	t.Cleanup(func() { _ = stop() })
	addr, err := p.MetricsAddress(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// brokenNVML is a backend whose driver cannot be loaded.
type brokenNVML struct{ gpu.Backend }

func (brokenNVML) Discover(context.Context) (gpu.Inventory, error) {
	return gpu.Inventory{}, errors.New("initialising NVML: ERROR_LIBRARY_NOT_FOUND")
}
func (brokenNVML) Close() error { return nil }

// TestProbesFollowKubeletRegistration pins that the plugin's liveness and
// readiness fail while it is not registered with the kubelet (here the
// node agent, which serves kubelet.sock as the kubelet does) and pass
// again once it is, and that they fail when NVML cannot start.
func TestProbesFollowKubeletRegistration(t *testing.T) {
	cp := framework.Start(t, framework.Options{})
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()

	t.Run("kubelet registration", func(t *testing.T) {
		node := framework.CreateReadyNode(ctx, t, cp.Kube, "probe-node", nil).Name
		// unix socket paths are short; t.TempDir's can be too long.
		pluginDir, err := os.MkdirTemp("", "dp")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(pluginDir) })
		startAgent := func() (stop func()) {
			agentCtx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			agent := &nodeagent.Agent{NodeName: node, PluginDir: pluginDir, Kube: cp.Kube, DeviceResources: []string{"nvidia.com/gpu"}}
			go func() { done <- agent.Run(agentCtx) }()
			return func() { cancel(); <-done }
		}

		addr := startPlugin(ctx, t, cp, node, pluginDir, nil)
		// No kubelet yet.
		waitProbes(ctx, t, addr, http.StatusInternalServerError, "kubelet-registration: waiting for the kubelet socket")

		stopAgent := startAgent()
		waitProbes(ctx, t, addr, http.StatusOK, "ok")

		// The kubelet goes away: its socket is removed.
		stopAgent()
		waitProbes(ctx, t, addr, http.StatusInternalServerError, "kubelet-registration:")

		// It comes back, and the plugin registers again.
		stopAgent = startAgent()
		defer stopAgent()
		waitProbes(ctx, t, addr, http.StatusOK, "ok")
	})

	t.Run("NVML that cannot start", func(t *testing.T) {
		node := framework.CreateReadyNode(ctx, t, cp.Kube, "no-nvml-node", nil).Name
		addr := startPlugin(ctx, t, cp, node, t.TempDir(), brokenNVML{})
		waitProbes(ctx, t, addr, http.StatusInternalServerError, "gpu-discovery: initialising NVML: ERROR_LIBRARY_NOT_FOUND")
	})
}

package kueue

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/webhook/app"
)

// startWebhook runs Tessera's admission webhook in process, self-managed
// TLS, behind the shipped configurations pointed at its loopback address,
// until the test ends: the Job's pods pass through it after Kueue's own
// pod webhook, as in a cluster.
func startWebhook(t *testing.T, cp *framework.ControlPlane) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mutating, validating, err := framework.InstallWebhookConfigurations(ctx, cp.Kube,
		filepath.Join(framework.RepoRoot(), "deploy", "webhook"), "https://"+ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	opts := app.NewOptions()
	opts.ListenAddress = ln.Addr().String()
	opts.Namespace = framework.SystemNamespace
	opts.IPAddresses = []string{"127.0.0.1"}
	opts.MutatingWebhookConfiguration, opts.ValidatingWebhookConfiguration = mutating, validating
	deps, err := app.NewDependencies(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	deps.Listener = ln
	server, err := app.NewServer(opts, deps)
	if err != nil {
		t.Fatalf("creating the webhook server: %v", err)
	}
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2)))
	runCtx, stop := context.WithCancel(klog.NewContext(context.Background(), logger))
	done := make(chan error, 1)
	go func() { done <- server.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("webhook: %v", err)
		}
	})
	if err := framework.WaitWebhookTrusted(ctx, cp.Kube, mutating, validating); err != nil {
		t.Fatalf("waiting for the API server to trust Tessera's webhook: %v", err)
	}
}

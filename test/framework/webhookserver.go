package framework

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	webhookapp "github.com/tessera-gpu/tessera/webhook/app"
)

// StartWebhook runs Tessera's admission webhook in process until the test
// ends: self-managed TLS, behind the shipped configurations of
// deploy/webhook pointed at its loopback address, built as the daemon
// builds it (its clients' rate limits, not the test's). adjust, when not
// nil, changes its options first, such as its mode. It returns once the
// API server trusts the webhook, so that the next pod created passes
// through it.
func (cp *ControlPlane) StartWebhook(t testing.TB, adjust func(*webhookapp.Options)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mutating, validating, err := InstallWebhookConfigurations(ctx, cp.Kube,
		filepath.Join(RepoRoot(), "deploy", "webhook"), "https://"+ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	opts := webhookapp.NewOptions()
	opts.ListenAddress = ln.Addr().String()
	opts.Namespace = SystemNamespace
	opts.IPAddresses = []string{"127.0.0.1"}
	opts.MutatingWebhookConfiguration, opts.ValidatingWebhookConfiguration = mutating, validating
	if adjust != nil {
		adjust(opts)
	}
	stop := cp.RunWebhook(t, opts, ln)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("webhook: %v", err)
		}
	})
	if err := WaitWebhookTrusted(ctx, cp.Kube, mutating, validating); err != nil {
		t.Fatalf("waiting for the API server to trust Tessera's webhook: %v", err)
	}
}

// RunWebhook runs the admission webhook of opts in process on ln, its
// clients built as the daemon builds them (its rate limits, not the
// test's), until stop is called; stop returns what the server's Run
// returned, however often it is called.
func (cp *ControlPlane) RunWebhook(t testing.TB, opts *webhookapp.Options, ln net.Listener) (stop func() error) {
	t.Helper()
	deps, err := webhookapp.NewDependencies(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	deps.Listener = ln
	server, err := webhookapp.NewServer(opts, deps)
	if err != nil {
		t.Fatalf("creating the webhook server: %v", err)
	}
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx) }()
	return sync.OnceValue(func() error {
		cancel()
		return <-done
	})
}

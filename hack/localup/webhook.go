package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/webhook/admission"
)

// webhookNamespace holds the webhook's self-managed certificate Secret.
const webhookNamespace = "tessera-system"

// startWebhook registers the shipped webhook configurations, pointed at a
// loopback URL instead of the in-cluster Service, and starts the webhook in
// self-managed TLS mode: it makes its own CA and writes the caBundle of
// both configurations, so the API server trusts it with no manual step. In
// DRA mode it turns GPU pods' resources into claims.
func (c *cluster) startWebhook(ctx context.Context) error {
	port, err := framework.FreePort()
	if err != nil {
		return err
	}
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	mutating, validating, err := framework.InstallWebhookConfigurations(ctx, c.cp.Kube, filepath.Join("deploy", "webhook"), base)
	if err != nil {
		return err
	}
	metricsPort, err := framework.FreePort()
	if err != nil {
		return err
	}
	mode := admission.ModeExtender
	if c.o.dra() {
		mode = admission.ModeDRA
	}
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", metricsPort)
	args := []string{
		"--kubeconfig", c.cp.KubeconfigPath,
		"--listen-address", fmt.Sprintf("127.0.0.1:%d", port),
		"--metrics-address", metricsAddr,
		"--tls-mode", "self-managed",
		"--tls-ip-addresses", "127.0.0.1",
		"--namespace", webhookNamespace,
		"--mutating-webhook-configuration", mutating,
		"--validating-webhook-configuration", validating,
		"--mode", mode,
	}
	if c.o.kueue {
		// Kueue runs with the shipped configuration: the webhook warns
		// about a queue it names that Kueue will not manage.
		integrations, namespaces, err := framework.KueueScope(framework.KueueConfigFile)
		if err != nil {
			return err
		}
		args = append(args, "--kueue-integrations", strings.Join(integrations, ","), "--kueue-managed-namespaces", namespaces)
	}
	p, err := c.daemon("webhook", "webhook", args...)
	if err != nil {
		return err
	}
	if err := p.WaitOK(ctx, "http://"+metricsAddr+"/readyz", time.Minute); err != nil {
		return fmt.Errorf("the webhook did not become ready (see %s): %w", filepath.Join(c.o.stateDir, "webhook.log"), err)
	}
	c.metrics = append(c.metrics, endpoint{"admission webhook", "http://" + metricsAddr + "/metrics"})
	return framework.WaitWebhookTrusted(ctx, c.cp.Kube, mutating, validating)
}

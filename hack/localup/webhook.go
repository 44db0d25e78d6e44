package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/tessera-gpu/tessera/test/framework"
)

// webhookNamespace holds the webhook's self-managed certificate Secret.
const webhookNamespace = "tessera-system"

// startWebhook registers the shipped webhook configurations, pointed at a
// loopback URL instead of the in-cluster Service, and starts the webhook in
// self-managed TLS mode: it makes its own CA and writes the caBundle of
// both configurations, so the API server trusts it with no manual step.
func (c *cluster) startWebhook(ctx context.Context) error {
	port, err := framework.FreePort()
	if err != nil {
		return err
	}
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	mutating, validating, err := readWebhookConfigurations(filepath.Join("deploy", "webhook"), base)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: webhookNamespace}}
	if _, err := c.cp.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	admission := c.cp.Kube.AdmissionregistrationV1()
	if _, err := admission.MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("registering the mutating webhook: %w", err)
	}
	if _, err := admission.ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("registering the validating webhook: %w", err)
	}

	metricsPort, err := framework.FreePort()
	if err != nil {
		return err
	}
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", metricsPort)
	if err := c.daemon("webhook", "webhook",
		"--kubeconfig", c.cp.KubeconfigPath,
		"--listen-address", fmt.Sprintf("127.0.0.1:%d", port),
		"--metrics-address", metricsAddr,
		"--tls-mode", "self-managed",
		"--tls-ip-addresses", "127.0.0.1",
		"--namespace", webhookNamespace,
		"--mutating-webhook-configuration", mutating.Name,
		"--validating-webhook-configuration", validating.Name,
	); err != nil {
		return err
	}
	if err := waitOK(ctx, "http://"+metricsAddr+"/readyz"); err != nil {
		return fmt.Errorf("the webhook did not become ready (see %s): %w", filepath.Join(c.o.stateDir, "webhook.log"), err)
	}
	c.metrics = append(c.metrics, endpoint{"admission webhook", "http://" + metricsAddr + "/metrics"})
	// The API server reads the caBundle from its own informer; wait until
	// both configurations carry one.
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		m, err := admission.MutatingWebhookConfigurations().Get(ctx, mutating.Name, metav1.GetOptions{})
		if err != nil || len(m.Webhooks) == 0 || len(m.Webhooks[0].ClientConfig.CABundle) == 0 {
			return false, nil
		}
		v, err := admission.ValidatingWebhookConfigurations().Get(ctx, validating.Name, metav1.GetOptions{})
		return err == nil && len(v.Webhooks) > 0 && len(v.Webhooks[0].ClientConfig.CABundle) > 0, nil
	})
}

// readWebhookConfigurations reads the shipped configurations and points
// every webhook at base plus the path its Service reference names.
func readWebhookConfigurations(dir, base string) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, nil, err
	}
	var (
		mutating   *admissionregistrationv1.MutatingWebhookConfiguration
		validating *admissionregistrationv1.ValidatingWebhookConfiguration
	)
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, nil, err
		}
		docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := docs.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, nil, fmt.Errorf("reading %s: %w", file, err)
			}
			var meta metav1.TypeMeta
			if err := utilyaml.Unmarshal(doc, &meta); err != nil {
				return nil, nil, fmt.Errorf("decoding %s: %w", file, err)
			}
			switch meta.Kind {
			case "MutatingWebhookConfiguration":
				mutating = &admissionregistrationv1.MutatingWebhookConfiguration{}
				if err := utilyaml.Unmarshal(doc, mutating); err != nil {
					return nil, nil, fmt.Errorf("decoding %s: %w", file, err)
				}
				for i := range mutating.Webhooks {
					mutating.Webhooks[i].ClientConfig = urlConfig(base, mutating.Webhooks[i].ClientConfig)
				}
			case "ValidatingWebhookConfiguration":
				validating = &admissionregistrationv1.ValidatingWebhookConfiguration{}
				if err := utilyaml.Unmarshal(doc, validating); err != nil {
					return nil, nil, fmt.Errorf("decoding %s: %w", file, err)
				}
				for i := range validating.Webhooks {
					validating.Webhooks[i].ClientConfig = urlConfig(base, validating.Webhooks[i].ClientConfig)
				}
			}
		}
	}
	if mutating == nil || validating == nil {
		return nil, nil, fmt.Errorf("%s must hold a MutatingWebhookConfiguration and a ValidatingWebhookConfiguration", dir)
	}
	return mutating, validating, nil
}

func urlConfig(base string, shipped admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.WebhookClientConfig {
	path := ""
	if shipped.Service != nil && shipped.Service.Path != nil {
		path = *shipped.Service.Path
	}
	url := base + path
	return admissionregistrationv1.WebhookClientConfig{URL: &url}
}

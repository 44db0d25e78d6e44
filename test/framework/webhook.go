package framework

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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
)

// InstallWebhookConfigurations registers the webhook configurations
// shipped in dir (deploy/webhook) with every webhook pointed at base, such
// as https://127.0.0.1:8443, plus the path its Service reference names,
// and returns their names. They carry no caBundle: a webhook in
// self-managed TLS mode writes it (WaitWebhookTrusted).
func InstallWebhookConfigurations(ctx context.Context, kube kubernetes.Interface, dir, base string) (mutating, validating string, err error) {
	m, v, err := readWebhookConfigurations(dir, base)
	if err != nil {
		return "", "", err
	}
	admission := kube.AdmissionregistrationV1()
	if _, err := admission.MutatingWebhookConfigurations().Create(ctx, m, metav1.CreateOptions{}); err != nil {
		return "", "", fmt.Errorf("registering the mutating webhook: %w", err)
	}
	if _, err := admission.ValidatingWebhookConfigurations().Create(ctx, v, metav1.CreateOptions{}); err != nil {
		return "", "", fmt.Errorf("registering the validating webhook: %w", err)
	}
	return m.Name, v.Name, nil
}

// WaitWebhookTrusted waits until both configurations carry a caBundle;
// the API server reads it from its own informer.
func WaitWebhookTrusted(ctx context.Context, kube kubernetes.Interface, mutating, validating string) error {
	admission := kube.AdmissionregistrationV1()
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		m, err := admission.MutatingWebhookConfigurations().Get(ctx, mutating, metav1.GetOptions{})
		if err != nil || len(m.Webhooks) == 0 || len(m.Webhooks[0].ClientConfig.CABundle) == 0 {
			return false, nil
		}
		v, err := admission.ValidatingWebhookConfigurations().Get(ctx, validating, metav1.GetOptions{})
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

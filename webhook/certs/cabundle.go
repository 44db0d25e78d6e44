package certs

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

// injectCABundle writes the authority into the caBundle of every webhook of
// the configured configurations, when it is not there already.
func (s *SelfManaged) injectCABundle(ctx context.Context, caPEM []byte) error {
	var errs []error
	if name := s.cfg.MutatingWebhookConfiguration; name != "" {
		errs = append(errs, injectInto(ctx, s, s.kube.AdmissionregistrationV1().MutatingWebhookConfigurations(),
			"MutatingWebhookConfiguration", name, caPEM, func(cfg *admissionregistrationv1.MutatingWebhookConfiguration) []*admissionregistrationv1.WebhookClientConfig {
				return clientConfigsOf(cfg.Webhooks, func(w *admissionregistrationv1.MutatingWebhook) *admissionregistrationv1.WebhookClientConfig {
					return &w.ClientConfig
				})
			}))
	}
	if name := s.cfg.ValidatingWebhookConfiguration; name != "" {
		errs = append(errs, injectInto(ctx, s, s.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations(),
			"ValidatingWebhookConfiguration", name, caPEM, func(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) []*admissionregistrationv1.WebhookClientConfig {
				return clientConfigsOf(cfg.Webhooks, func(w *admissionregistrationv1.ValidatingWebhook) *admissionregistrationv1.WebhookClientConfig {
					return &w.ClientConfig
				})
			}))
	}
	return errors.Join(errs...)
}

// clientConfigsOf points at the client configuration of each webhook.
func clientConfigsOf[W any](webhooks []W, clientConfig func(*W) *admissionregistrationv1.WebhookClientConfig) []*admissionregistrationv1.WebhookClientConfig {
	configs := make([]*admissionregistrationv1.WebhookClientConfig, len(webhooks))
	for i := range webhooks {
		configs[i] = clientConfig(&webhooks[i])
	}
	return configs
}

// configurationClient reads and writes one kind of webhook configuration.
type configurationClient[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*T, error)
	Update(ctx context.Context, cfg *T, opts metav1.UpdateOptions) (*T, error)
}

// injectInto writes the authority into the webhooks of the configuration
// name of one kind, whose client configurations clientConfigs points at.
func injectInto[T any](ctx context.Context, s *SelfManaged, client configurationClient[T], kind, name string, caPEM []byte,
	clientConfigs func(*T) []*admissionregistrationv1.WebhookClientConfig) error {
	return s.updateBundles(ctx, kind, name, func() (bool, error) {
		cfg, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !setBundles(clientConfigs(cfg), caPEM) {
			return false, nil
		}
		_, err = client.Update(ctx, cfg, metav1.UpdateOptions{FieldManager: s.cfg.FieldManager})
		return true, err
	})
}

// updateBundles runs one read-modify-write of a configuration, again when
// it lost to a concurrent writer.
func (s *SelfManaged) updateBundles(ctx context.Context, kind, name string, update func() (bool, error)) error {
	var wrote bool
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		wrote, err = update()
		return err
	})
	if err != nil {
		return fmt.Errorf("writing the CA bundle into %s %s: %w", kind, name, err)
	}
	if wrote {
		klog.FromContext(ctx).Info("Wrote the CA bundle into the webhook configuration", "kind", kind, "name", name)
	}
	return nil
}

// setBundles sets every client configuration's caBundle and reports
// whether any changed.
func setBundles(configs []*admissionregistrationv1.WebhookClientConfig, caPEM []byte) bool {
	changed := false
	for _, c := range configs {
		if !bytes.Equal(c.CABundle, caPEM) {
			c.CABundle = caPEM
			changed = true
		}
	}
	return changed
}

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
		client := s.kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
		errs = append(errs, s.updateBundles(ctx, "MutatingWebhookConfiguration", name, func() (bool, error) {
			cfg, err := client.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			configs := make([]*admissionregistrationv1.WebhookClientConfig, len(cfg.Webhooks))
			for i := range cfg.Webhooks {
				configs[i] = &cfg.Webhooks[i].ClientConfig
			}
			if !setBundles(configs, caPEM) {
				return false, nil
			}
			_, err = client.Update(ctx, cfg, metav1.UpdateOptions{FieldManager: s.cfg.FieldManager})
			return true, err
		}))
	}
	if name := s.cfg.ValidatingWebhookConfiguration; name != "" {
		client := s.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
		errs = append(errs, s.updateBundles(ctx, "ValidatingWebhookConfiguration", name, func() (bool, error) {
			cfg, err := client.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			configs := make([]*admissionregistrationv1.WebhookClientConfig, len(cfg.Webhooks))
			for i := range cfg.Webhooks {
				configs[i] = &cfg.Webhooks[i].ClientConfig
			}
			if !setBundles(configs, caPEM) {
				return false, nil
			}
			_, err = client.Update(ctx, cfg, metav1.UpdateOptions{FieldManager: s.cfg.FieldManager})
			return true, err
		}))
	}
	return errors.Join(errs...)
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

package certs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// SelfManagedConfig says where the self-managed certificate lives and what
// it must cover.
type SelfManagedConfig struct {
	// Namespace and SecretName name the Secret that holds the authority and
	// the serving certificate, shared by every replica.
	Namespace  string
	SecretName string
	// DNSNames and IPs are what the serving certificate must cover: the
	// webhook Service's names, or the address in a clientConfig.url.
	DNSNames []string
	IPs      []net.IP
	// MutatingWebhookConfiguration and ValidatingWebhookConfiguration name
	// the configurations whose caBundle is kept equal to the authority; an
	// empty name is skipped.
	MutatingWebhookConfiguration   string
	ValidatingWebhookConfiguration string
	// CAValidity and CertValidity are the lifetimes of new certificates;
	// one within RenewBefore of its expiry is replaced.
	CAValidity   time.Duration
	CertValidity time.Duration
	RenewBefore  time.Duration
	// ResyncInterval is how often the Secret and the caBundles are checked
	// again, which picks up a renewal by another replica.
	ResyncInterval time.Duration
	// FieldManager names the webhook in the managed fields of its writes.
	FieldManager string
}

// DefaultSelfManagedConfig returns the lifetimes and intervals Tessera
// ships with; the names and what to cover are left to the caller.
func DefaultSelfManagedConfig() SelfManagedConfig {
	return SelfManagedConfig{
		CAValidity:     10 * 365 * 24 * time.Hour,
		CertValidity:   365 * 24 * time.Hour,
		RenewBefore:    30 * 24 * time.Hour,
		ResyncInterval: time.Minute,
		FieldManager:   "tessera-webhook",
	}
}

// Validate names the first field that cannot work.
func (c SelfManagedConfig) Validate() error {
	var errs []error
	if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("namespace %q: %v", c.Namespace, msgs))
	}
	if msgs := validation.IsDNS1123Subdomain(c.SecretName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("secret name %q: %v", c.SecretName, msgs))
	}
	if len(c.DNSNames) == 0 && len(c.IPs) == 0 {
		errs = append(errs, errors.New("the certificate must cover at least one DNS name or IP address"))
	}
	for _, d := range c.DNSNames {
		if msgs := validation.IsDNS1123Subdomain(d); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("DNS name %q: %v", d, msgs))
		}
	}
	if c.CAValidity <= c.RenewBefore || c.CertValidity <= c.RenewBefore || c.RenewBefore <= 0 {
		errs = append(errs, fmt.Errorf("renew-before %v must be positive and shorter than the CA validity %v and the certificate validity %v",
			c.RenewBefore, c.CAValidity, c.CertValidity))
	}
	if c.ResyncInterval <= 0 {
		errs = append(errs, fmt.Errorf("resync interval must be positive, got %v", c.ResyncInterval))
	}
	if c.FieldManager == "" {
		errs = append(errs, errors.New("field manager must be set"))
	}
	return errors.Join(errs...)
}

// SelfManaged serves a certificate signed by an authority of its own, kept
// in a Secret so that every replica serves the same, and keeps that
// authority in its webhook configurations' caBundle so that kube-apiserver
// trusts it with no manual step.
type SelfManaged struct {
	servingCert

	cfg   SelfManagedConfig
	kube  kubernetes.Interface
	clock clock.WithTicker
	ready atomic.Bool
	// served is the PEM of the certificate being served, to log changes.
	served atomic.Pointer[[]byte]
}

// NewSelfManaged returns a SelfManaged that has loaded nothing yet: Run, or
// Sync once, loads or creates the certificate.
func NewSelfManaged(cfg SelfManagedConfig, kube kubernetes.Interface, clk clock.WithTicker) (*SelfManaged, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("self-managed certificate: %w", err)
	}
	return &SelfManaged{cfg: cfg, kube: kube, clock: clk}, nil
}

// Ready reports an error until the first Sync has succeeded.
func (s *SelfManaged) Ready() error {
	if !s.ready.Load() {
		return errors.New("the self-managed serving certificate is not set up yet")
	}
	return nil
}

// Run syncs until ctx ends: at once, then every ResyncInterval, and after a
// failure sooner, backing off from one second.
func (s *SelfManaged) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	const firstRetry = time.Second
	retry := firstRetry
	for {
		wait := s.cfg.ResyncInterval
		if err := s.Sync(ctx); err != nil {
			logger.Error(err, "Syncing the self-managed serving certificate", "retryIn", retry)
			wait = retry
			retry = min(2*retry, s.cfg.ResyncInterval)
		} else {
			retry = firstRetry
		}
		select {
		case <-ctx.Done():
			return
		case <-s.clock.After(wait):
		}
	}
}

// Sync makes sure the Secret holds a valid authority and serving
// certificate, serves that certificate, and writes the authority into the
// webhook configurations' caBundle.
func (s *SelfManaged) Sync(ctx context.Context) error {
	b, err := s.ensureSecret(ctx)
	if err != nil {
		return err
	}
	if prev := s.served.Load(); prev == nil || string(*prev) != string(b.certPEM) {
		s.set(b.pair)
		s.served.Store(&b.certPEM)
		klog.FromContext(ctx).Info("Serving the self-managed certificate",
			"secret", klog.KRef(s.cfg.Namespace, s.cfg.SecretName), "notAfter", b.pair.Leaf.NotAfter)
	}
	if err := s.injectCABundle(ctx, b.ca.CertPEM); err != nil {
		return err
	}
	s.ready.Store(true)
	return nil
}

package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// Keys of the Secret. tls.crt and tls.key make it a kubernetes.io/tls Secret.
const (
	KeyCACert = "ca.crt"
	KeyCAKey  = "ca.key"
	KeyCert   = corev1.TLSCertKey
	KeyKey    = corev1.TLSPrivateKeyKey
)

// maxSecretAttempts bounds the writes lost to other replicas in one sync.
const maxSecretAttempts = 5

// bundle is what the Secret holds, checked.
type bundle struct {
	ca              *Authority
	certPEM, keyPEM []byte
	pair            *tls.Certificate
}

func (b *bundle) data() map[string][]byte {
	return map[string][]byte{KeyCACert: b.ca.CertPEM, KeyCAKey: b.ca.KeyPEM, KeyCert: b.certPEM, KeyKey: b.keyPEM}
}

// ensureSecret returns the Secret's bundle, first creating the Secret or
// renewing what it holds if needed. Replicas that race agree through the
// API server: a create or update that loses starts over from what won.
func (s *SelfManaged) ensureSecret(ctx context.Context) (*bundle, error) {
	logger := klog.FromContext(ctx).WithValues("secret", klog.KRef(s.cfg.Namespace, s.cfg.SecretName))
	secrets := s.kube.CoreV1().Secrets(s.cfg.Namespace)
	for range maxSecretAttempts {
		now := s.clock.Now()
		secret, err := secrets.Get(ctx, s.cfg.SecretName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			b, err := s.newBundle(nil, now)
			if err != nil {
				return nil, err
			}
			_, err = secrets.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{
					Name: s.cfg.SecretName, Namespace: s.cfg.Namespace,
					Labels: map[string]string{"app.kubernetes.io/managed-by": s.cfg.FieldManager},
				},
				Type: corev1.SecretTypeTLS,
				Data: b.data(),
			}, metav1.CreateOptions{FieldManager: s.cfg.FieldManager})
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("creating Secret %s/%s: %w", s.cfg.Namespace, s.cfg.SecretName, err)
			}
			logger.Info("Created the webhook's certificate authority and serving certificate")
			return b, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading Secret %s/%s: %w", s.cfg.Namespace, s.cfg.SecretName, err)
		}
		b, ca, why := s.check(secret.Data, now)
		if why == "" {
			return b, nil
		}
		logger.Info("Renewing the webhook certificate", "reason", why, "newAuthority", ca == nil)
		if b, err = s.newBundle(ca, now); err != nil {
			return nil, err
		}
		secret = secret.DeepCopy()
		secret.Data = b.data()
		_, err = secrets.Update(ctx, secret, metav1.UpdateOptions{FieldManager: s.cfg.FieldManager})
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("updating Secret %s/%s: %w", s.cfg.Namespace, s.cfg.SecretName, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("Secret %s/%s changed under each of %d attempts to write it", s.cfg.Namespace, s.cfg.SecretName, maxSecretAttempts)
}

// check returns the Secret's bundle when it is fit to serve, or else why
// not and the authority when that can still sign.
func (s *SelfManaged) check(data map[string][]byte, now time.Time) (*bundle, *Authority, string) {
	renewBy := now.Add(s.cfg.RenewBefore)
	ca, err := ParseAuthority(data[KeyCACert], data[KeyCAKey])
	if err != nil {
		return nil, nil, fmt.Sprintf("no usable authority: %v", err)
	}
	if renewBy.After(ca.Cert.NotAfter) {
		return nil, nil, fmt.Sprintf("the authority expires at %s", ca.Cert.NotAfter.Format(time.RFC3339))
	}
	pair, err := tls.X509KeyPair(data[KeyCert], data[KeyKey])
	if err != nil {
		return nil, ca, fmt.Sprintf("no usable serving certificate: %v", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	if _, err := pair.Leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return nil, ca, fmt.Sprintf("the serving certificate does not verify against the authority: %v", err)
	}
	if renewBy.After(pair.Leaf.NotAfter) {
		return nil, ca, fmt.Sprintf("the serving certificate expires at %s", pair.Leaf.NotAfter.Format(time.RFC3339))
	}
	for _, host := range s.hosts() {
		if err := pair.Leaf.VerifyHostname(host); err != nil {
			return nil, ca, fmt.Sprintf("the serving certificate does not cover %s", host)
		}
	}
	return &bundle{ca: ca, certPEM: data[KeyCert], keyPEM: data[KeyKey], pair: &pair}, nil, ""
}

// newBundle issues a serving certificate, with a new authority when ca is nil.
func (s *SelfManaged) newBundle(ca *Authority, now time.Time) (*bundle, error) {
	if ca == nil {
		var err error
		if ca, err = NewAuthority("tessera-webhook-ca@"+now.UTC().Format(time.RFC3339), now, s.cfg.CAValidity); err != nil {
			return nil, err
		}
	}
	certPEM, keyPEM, err := ca.Issue(now, s.cfg.CertValidity, s.cfg.DNSNames, s.cfg.IPs)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading the issued certificate: %w", err)
	}
	return &bundle{ca: ca, certPEM: certPEM, keyPEM: keyPEM, pair: &pair}, nil
}

func (s *SelfManaged) hosts() []string {
	hosts := append([]string(nil), s.cfg.DNSNames...)
	for _, ip := range s.cfg.IPs {
		hosts = append(hosts, ip.String())
	}
	return hosts
}

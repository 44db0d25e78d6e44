package certs

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
)

const (
	testMutating   = "tessera-webhook"
	testValidating = "tessera-webhook"
)

func testConfig() SelfManagedConfig {
	cfg := DefaultSelfManagedConfig()
	cfg.Namespace = "tessera-system"
	cfg.SecretName = "tessera-webhook-tls"
	cfg.DNSNames = []string{"tessera-webhook.tessera-system.svc"}
	cfg.IPs = []net.IP{net.ParseIP("127.0.0.1")}
	cfg.MutatingWebhookConfiguration = testMutating
	cfg.ValidatingWebhookConfiguration = testValidating
	return cfg
}

func webhookConfigurations() []runtime.Object {
	return []runtime.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: testMutating},
			Webhooks:   []admissionregistrationv1.MutatingWebhook{{Name: "mutate.gpu.tessera.dev"}},
		},
		&admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: testValidating},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{
				{Name: "validate.gpu.tessera.dev"}, {Name: "validate-more.gpu.tessera.dev"},
			},
		},
	}
}

func syncOnce(t *testing.T, s *SelfManaged) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	if err := s.Sync(ctx); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if err := s.Ready(); err != nil {
		t.Fatalf("not ready after Sync: %v", err)
	}
}

func secretOf(t *testing.T, kube *fake.Clientset) *corev1.Secret {
	t.Helper()
	s, err := kube.CoreV1().Secrets("tessera-system").Get(context.Background(), "tessera-webhook-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkBundles asserts every webhook trusts exactly caPEM.
func checkBundles(t *testing.T, kube *fake.Clientset, caPEM []byte) {
	t.Helper()
	ctx := context.Background()
	m, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, testMutating, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, testValidating, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var bundles [][]byte
	for _, w := range m.Webhooks {
		bundles = append(bundles, w.ClientConfig.CABundle)
	}
	for _, w := range v.Webhooks {
		bundles = append(bundles, w.ClientConfig.CABundle)
	}
	for i, b := range bundles {
		if !bytes.Equal(b, caPEM) {
			t.Errorf("webhook %d trusts %q, want the Secret's authority", i, b)
		}
	}
}

func TestSelfManagedCreatesSecretAndBundles(t *testing.T) {
	kube := fake.NewClientset(webhookConfigurations()...)
	clk := clocktesting.NewFakeClock(testNow)
	s, err := NewSelfManaged(testConfig(), kube, clk)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetCertificate(nil); err == nil {
		t.Error("GetCertificate before the first sync succeeded")
	}
	if s.Ready() == nil {
		t.Error("ready before the first sync")
	}
	syncOnce(t, s)

	secret := secretOf(t, kube)
	if secret.Type != corev1.SecretTypeTLS {
		t.Errorf("Secret type = %q, want %q", secret.Type, corev1.SecretTypeTLS)
	}
	checkBundles(t, kube, secret.Data[KeyCACert])
	cert, err := s.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(secret.Data[KeyCert], pemBody(cert.Certificate[0])) {
		t.Error("serving a certificate that is not the Secret's")
	}
	for _, host := range []string{"tessera-webhook.tessera-system.svc", "127.0.0.1"} {
		if err := s.Leaf().VerifyHostname(host); err != nil {
			t.Errorf("certificate does not cover %s: %v", host, err)
		}
	}
}

func TestSelfManagedReplicasAgree(t *testing.T) {
	kube := fake.NewClientset(webhookConfigurations()...)
	clk := clocktesting.NewFakeClock(testNow)
	first, err := NewSelfManaged(testConfig(), kube, clk)
	if err != nil {
		t.Fatal(err)
	}
	syncOnce(t, first)
	kube.ClearActions()

	second, err := NewSelfManaged(testConfig(), kube, clk)
	if err != nil {
		t.Fatal(err)
	}
	syncOnce(t, second)
	if !first.Leaf().Equal(second.Leaf()) {
		t.Error("the second replica serves another certificate")
	}
	for _, a := range kube.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("the second replica wrote: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

func TestSelfManagedRenews(t *testing.T) {
	tests := []struct {
		name string
		// change prepares the cluster, clock and configuration after a
		// first sync; it returns the configuration of the next sync.
		change      func(t *testing.T, kube *fake.Clientset, clk *clocktesting.FakeClock) SelfManagedConfig
		wantNewCA   bool
		wantNewCert bool
	}{
		{
			name: "nothing to do",
			change: func(*testing.T, *fake.Clientset, *clocktesting.FakeClock) SelfManagedConfig {
				return testConfig()
			},
		},
		{
			name: "serving certificate near expiry is reissued by the same authority",
			change: func(_ *testing.T, _ *fake.Clientset, clk *clocktesting.FakeClock) SelfManagedConfig {
				clk.Step(testConfig().CertValidity - testConfig().RenewBefore + time.Hour)
				return testConfig()
			},
			wantNewCert: true,
		},
		{
			name: "authority near expiry is replaced",
			change: func(_ *testing.T, _ *fake.Clientset, clk *clocktesting.FakeClock) SelfManagedConfig {
				clk.Step(testConfig().CAValidity - testConfig().RenewBefore + time.Hour)
				return testConfig()
			},
			wantNewCA: true, wantNewCert: true,
		},
		{
			name: "a new name is covered by a reissued certificate",
			change: func(*testing.T, *fake.Clientset, *clocktesting.FakeClock) SelfManagedConfig {
				cfg := testConfig()
				cfg.DNSNames = append(cfg.DNSNames, "tessera-webhook.tessera-system.svc.cluster.local")
				return cfg
			},
			wantNewCert: true,
		},
		{
			name: "a corrupt Secret is replaced",
			change: func(t *testing.T, kube *fake.Clientset, _ *clocktesting.FakeClock) SelfManagedConfig {
				s := secretOf(t, kube)
				s.Data[KeyCAKey] = []byte("garbage")
				if _, err := kube.CoreV1().Secrets(s.Namespace).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				return testConfig()
			},
			wantNewCA: true, wantNewCert: true,
		},
		{
			name: "a caBundle reset by someone else is written again",
			change: func(t *testing.T, kube *fake.Clientset, _ *clocktesting.FakeClock) SelfManagedConfig {
				c := kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
				m, err := c.Get(context.Background(), testMutating, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				m.Webhooks[0].ClientConfig.CABundle = nil
				if _, err := c.Update(context.Background(), m, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				return testConfig()
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset(webhookConfigurations()...)
			clk := clocktesting.NewFakeClock(testNow)
			s, err := NewSelfManaged(testConfig(), kube, clk)
			if err != nil {
				t.Fatal(err)
			}
			syncOnce(t, s)
			before := secretOf(t, kube)

			next, err := NewSelfManaged(tc.change(t, kube, clk), kube, clk)
			if err != nil {
				t.Fatal(err)
			}
			syncOnce(t, next)
			after := secretOf(t, kube)
			if got := !bytes.Equal(before.Data[KeyCACert], after.Data[KeyCACert]); got != tc.wantNewCA {
				t.Errorf("new authority = %v, want %v", got, tc.wantNewCA)
			}
			if got := !bytes.Equal(before.Data[KeyCert], after.Data[KeyCert]); got != tc.wantNewCert {
				t.Errorf("new serving certificate = %v, want %v", got, tc.wantNewCert)
			}
			if !bytes.Contains(after.Data[KeyCert], pemBody(next.Leaf().Raw)) {
				t.Error("serving a certificate that is not the Secret's")
			}
			checkBundles(t, kube, after.Data[KeyCACert])
		})
	}
}

func TestSelfManagedLosesRaces(t *testing.T) {
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	tests := []struct {
		name string
		// setup makes the winner's Secret land in kube just as the loser writes.
		setup func(t *testing.T, kube *fake.Clientset, won *corev1.Secret)
	}{
		{
			name: "another replica creates the Secret first",
			setup: func(t *testing.T, kube *fake.Clientset, won *corev1.Secret) {
				raced := false
				kube.PrependReactor("create", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
					if raced {
						return false, nil, nil
					}
					raced = true
					if err := kube.Tracker().Create(secrets, won, won.Namespace); err != nil {
						t.Error(err)
					}
					return true, nil, apierrors.NewAlreadyExists(secrets.GroupResource(), won.Name)
				})
			},
		},
		{
			name: "another replica renews the Secret first",
			setup: func(t *testing.T, kube *fake.Clientset, won *corev1.Secret) {
				// An expired Secret both replicas want to renew.
				old, err := NewSelfManaged(testConfig(), kube, clocktesting.NewFakeClock(testNow.Add(-2*365*24*time.Hour)))
				if err != nil {
					t.Fatal(err)
				}
				syncOnce(t, old)
				raced := false
				kube.PrependReactor("update", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
					if raced {
						return false, nil, nil
					}
					raced = true
					if err := kube.Tracker().Update(secrets, won, won.Namespace); err != nil {
						t.Error(err)
					}
					return true, nil, apierrors.NewConflict(secrets.GroupResource(), won.Name, nil)
				})
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(testNow)
			elsewhere := fake.NewClientset(webhookConfigurations()...)
			winner, err := NewSelfManaged(testConfig(), elsewhere, clk)
			if err != nil {
				t.Fatal(err)
			}
			syncOnce(t, winner)

			kube := fake.NewClientset(webhookConfigurations()...)
			tc.setup(t, kube, secretOf(t, elsewhere))
			loser, err := NewSelfManaged(testConfig(), kube, clk)
			if err != nil {
				t.Fatal(err)
			}
			syncOnce(t, loser)
			if !loser.Leaf().Equal(winner.Leaf()) {
				t.Error("the replica that lost the race serves its own certificate, not the winner's")
			}
			checkBundles(t, kube, secretOf(t, kube).Data[KeyCACert])
		})
	}
}

func TestSelfManagedMissingConfigurationIsNotReady(t *testing.T) {
	kube := fake.NewClientset()
	s, err := NewSelfManaged(testConfig(), kube, clocktesting.NewFakeClock(testNow))
	if err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	err = s.Sync(ctx)
	if err == nil || !strings.Contains(err.Error(), "writing the CA bundle into MutatingWebhookConfiguration tessera-webhook") {
		t.Errorf("Sync = %v, want an error naming the missing configuration", err)
	}
	if s.Ready() == nil {
		t.Error("ready although the API server cannot trust the certificate")
	}
}

func TestSelfManagedConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*SelfManagedConfig)
		wantErr string
	}{
		{name: "valid", edit: func(*SelfManagedConfig) {}},
		{name: "no namespace", edit: func(c *SelfManagedConfig) { c.Namespace = "" }, wantErr: `namespace ""`},
		{name: "bad secret name", edit: func(c *SelfManagedConfig) { c.SecretName = "Bad_Name" }, wantErr: `secret name "Bad_Name"`},
		{name: "nothing to cover", edit: func(c *SelfManagedConfig) { c.DNSNames, c.IPs = nil, nil }, wantErr: "at least one DNS name or IP"},
		{name: "bad DNS name", edit: func(c *SelfManagedConfig) { c.DNSNames = []string{"a b"} }, wantErr: `DNS name "a b"`},
		{name: "renewal longer than validity", edit: func(c *SelfManagedConfig) { c.RenewBefore = c.CertValidity }, wantErr: "renew-before"},
		{name: "zero resync", edit: func(c *SelfManagedConfig) { c.ResyncInterval = 0 }, wantErr: "resync interval must be positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			tc.edit(&cfg)
			err := cfg.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Errorf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Validate = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// pemBody is the base64 of a DER certificate as it appears in PEM, first line.
func pemBody(der []byte) []byte {
	p := string(encodeCert(der))
	lines := strings.Split(p, "\n")
	return []byte(lines[1])
}

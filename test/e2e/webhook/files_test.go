package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/webhook/admission"
	"github.com/tessera-gpu/tessera/webhook/app"
	"github.com/tessera-gpu/tessera/webhook/certs"
)

// TestFileCertificates runs the webhook on a certificate from files, as
// with cert-manager: the API server trusts the configured caBundle, and a
// certificate replaced on disk is served without a restart.
func TestFileCertificates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp := framework.Start(t, framework.Options{})
	createNamespace(ctx, t, cp.Kube, workNamespace, nil)

	ca, err := certs.NewAuthority("test-ca", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	first := writeServingPair(t, ca, certFile, keyFile)

	opts := app.NewOptions()
	opts.TLSMode = app.TLSModeFiles
	opts.CertFile, opts.KeyFile = certFile, keyFile
	opts.ReloadInterval = 100 * time.Millisecond
	opts.MetricsAddress = framework.FreeAddress(t)
	w := startWebhook(t, cp, opts)
	w.waitReady(ctx, t)
	if got := w.servedCertificate(t); !got.Equal(first) {
		t.Fatal("the webhook does not serve the certificate from the files")
	}

	// dryRun tries to create a GPU pod, so that nothing is left behind.
	dryRun := func(name string) (*corev1.Pod, error) {
		return cp.Kube.CoreV1().Pods(workNamespace).Create(ctx, gpuPod(name, "nvidia.com/gpucores", "20"),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	}
	// admitted waits until a GPU pod gets through the webhook.
	admitted := func(name string) error {
		var last error
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			var p *corev1.Pod
			p, last = dryRun(name)
			return last == nil && p.Spec.SchedulerName == admission.DefaultSchedulerName, nil
		})
		if err != nil {
			return fmt.Errorf("%w (last: %v)", err, last)
		}
		return nil
	}

	t.Run("the API server refuses a certificate its caBundle does not trust", func(t *testing.T) {
		other, err := certs.NewAuthority("other-ca", time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		installShipped(ctx, t, cp.Kube, w.base, other.CertPEM)
		var last error
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			// Until the API server loads the configurations, pods pass.
			_, last = dryRun("untrusted")
			return last != nil, nil
		})
		if err != nil || !strings.Contains(last.Error(), `failed calling webhook "mutate.pods.gpu.tessera.dev"`) || !strings.Contains(last.Error(), "x509") {
			t.Fatalf("creating a GPU pod = %v, want a failed webhook call over an untrusted certificate", last)
		}
	})

	t.Run("the API server trusts the caBundle of the certificate's authority", func(t *testing.T) {
		setCABundle(ctx, t, cp.Kube, ca.CertPEM)
		if err := admitted("trusted"); err != nil {
			t.Fatalf("no GPU pod got through the webhook: %v", err)
		}
	})

	t.Run("a certificate replaced on disk is served without a restart", func(t *testing.T) {
		second := writeServingPair(t, ca, certFile, keyFile)
		w.waitServing(ctx, t, second)
		// A new connection, as the API server opens, verifies against the caBundle.
		roots := x509.NewCertPool()
		roots.AddCert(ca.Cert)
		conn, err := tls.Dial("tcp", strings.TrimPrefix(w.base, "https://"), &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatalf("the renewed certificate does not verify against the caBundle: %v", err)
		}
		conn.Close()
		if err := admitted("renewed"); err != nil {
			t.Errorf("no GPU pod got through the webhook after the renewal: %v", err)
		}
	})

	t.Run("metrics and probes are also served over plain HTTP", func(t *testing.T) {
		base := "http://" + opts.MetricsAddress
		for path, want := range map[string]string{
			"/readyz":  "ok",
			"/healthz": "ok",
			"/metrics": `tessera_webhook_requests_total{result="patched",webhook="mutate"}`,
		} {
			resp, err := http.Get(base + path)
			if err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
				t.Errorf("GET %s = %d, want 200 with %q", path, resp.StatusCode, want)
			}
		}
		// The expiry of the certificate now served, for alerts.
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		served := w.servedCertificate(t).NotAfter.Unix()
		if !strings.Contains(string(body), fmt.Sprintf("tessera_webhook_serving_certificate_expiry_timestamp_seconds %g", float64(served))) {
			t.Errorf("/metrics has no expiry of %d for the served certificate", served)
		}
	})
}

// writeServingPair issues a certificate for 127.0.0.1 and replaces the
// files with it the way the kubelet updates a Secret volume: each file
// appears whole.
func writeServingPair(t *testing.T, ca *certs.Authority, certFile, keyFile string) *x509.Certificate {
	t.Helper()
	certPEM, keyPEM, err := ca.Issue(time.Now(), time.Hour, nil, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	for file, data := range map[string][]byte{keyFile: keyPEM, certFile: certPEM} {
		tmp := file + ".tmp"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// servedCertificate is the certificate a TLS client is shown now.
func (w *runningWebhook) servedCertificate(t testing.TB) *x509.Certificate {
	t.Helper()
	conn, err := tls.Dial("tcp", strings.TrimPrefix(w.base, "https://"), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // inspects the certificate
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

func (w *runningWebhook) waitServing(ctx context.Context, t testing.TB, want *x509.Certificate) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return w.servedCertificate(t).Equal(want), nil
	})
	if err != nil {
		t.Fatal("the webhook never served the new certificate")
	}
}

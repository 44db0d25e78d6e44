package app

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"github.com/tessera-gpu/tessera/scheduler/options"
)

// testCA is a certificate authority for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// newKeyAndTemplate returns a P-256 key and the template of a certificate
// for name, valid from an hour ago to an hour from now.
func newKeyAndTemplate(t *testing.T, serial int64, name string) (*ecdsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key, &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, tmpl := newKeyAndTemplate(t, 1, name)
	tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a certificate for usage, and returns it and its key as PEM.
func (ca *testCA) issue(t *testing.T, name string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key, tmpl := newKeyAndTemplate(t, 2, name)
	tmpl.KeyUsage, tmpl.ExtKeyUsage = x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{usage}
	tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestVerbsOffLoopbackNeedAClientCertificate serves the extender's verbs
// with TLS and a client authority, as its configuration requires off
// loopback, and checks that only a caller with a certificate from that
// authority is answered.
func TestVerbsOffLoopbackNeedAClientCertificate(t *testing.T) {
	dir := t.TempDir()
	serverCA, clientCA, otherCA := newTestCA(t, "serving"), newTestCA(t, "clients"), newTestCA(t, "someone else")
	certPEM, keyPEM := serverCA.issue(t, "extender", x509.ExtKeyUsageServerAuth)
	cfg := options.NewConfig()
	cfg.ListenAddress = "0.0.0.0:8888" // validated as a pod would run it; the test listens on loopback
	cfg.TLSCertFile = writeFile(t, dir, "tls.crt", certPEM)
	cfg.TLSKeyFile = writeFile(t, dir, "tls.key", keyPEM)
	cfg.ClientCAFile = writeFile(t, dir, "client-ca.crt", clientCA.pem)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}

	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	ln := listen(t)
	done := serve(ctx, cfg, Listeners{Extender: ln})
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(serverCA.pem)
	client := func(ca *testCA) *http.Client {
		tlsConfig := &tls.Config{RootCAs: roots}
		if ca != nil {
			c, k := ca.issue(t, "kube-scheduler", x509.ExtKeyUsageClientAuth)
			pair, err := tls.X509KeyPair(c, k)
			if err != nil {
				t.Fatal(err)
			}
			tlsConfig.Certificates = []tls.Certificate{pair}
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	}
	url := "https://" + ln.Addr().String() + "/bind"
	tests := []struct {
		name string
		ca   *testCA
		ok   bool
	}{
		{"no client certificate", nil, false},
		{"a certificate from another authority", otherCA, false},
		{"a certificate from the client authority", clientCA, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := client(tc.ca).Post(url, "application/json", strings.NewReader(`{}`))
			if err == nil {
				resp.Body.Close()
			}
			if (err == nil) != tc.ok {
				t.Errorf("POST /bind: %v, want answered=%v", err, tc.ok)
			}
			if err == nil && resp.StatusCode != http.StatusOK {
				t.Errorf("POST /bind = %d, want the extender's own answer", resp.StatusCode)
			}
		})
	}
	cancel()
	if err := waitReturn(t, done); err != nil {
		t.Errorf("Serve = %v", err)
	}
}

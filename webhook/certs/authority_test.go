package certs

import (
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"
)

var testNow = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func TestIssuedCertificateVerifies(t *testing.T) {
	ca, err := NewAuthority("test-ca", testNow, 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		validity time.Duration
		dns      []string
		ips      []net.IP
		wantHost []string
		wantEnd  time.Time
	}{
		{name: "service DNS names", validity: time.Hour, dns: []string{"tessera-webhook.tessera-system.svc", "tessera-webhook"},
			wantHost: []string{"tessera-webhook.tessera-system.svc", "tessera-webhook"}, wantEnd: testNow.Add(time.Hour)},
		{name: "IP address only", validity: time.Hour, ips: []net.IP{net.ParseIP("127.0.0.1")},
			wantHost: []string{"127.0.0.1"}, wantEnd: testNow.Add(time.Hour)},
		{name: "never outlives the authority", validity: 1000 * time.Hour, dns: []string{"a.b.svc"},
			wantHost: []string{"a.b.svc"}, wantEnd: ca.Cert.NotAfter},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			certPEM, keyPEM, err := ca.Issue(testNow, tc.validity, tc.dns, tc.ips)
			if err != nil {
				t.Fatal(err)
			}
			if len(keyPEM) == 0 {
				t.Fatal("no key")
			}
			leaf, err := parseCert(certPEM)
			if err != nil {
				t.Fatal(err)
			}
			roots := x509.NewCertPool()
			roots.AddCert(ca.Cert)
			for _, host := range tc.wantHost {
				if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, CurrentTime: testNow,
					KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
					t.Errorf("verifying for %s: %v", host, err)
				}
			}
			if !leaf.NotAfter.Equal(tc.wantEnd) {
				t.Errorf("NotAfter = %v, want %v", leaf.NotAfter, tc.wantEnd)
			}
			if leaf.IsCA {
				t.Error("serving certificate is a CA")
			}
		})
	}
}

func TestIssueNeedsAName(t *testing.T) {
	ca, err := NewAuthority("test-ca", testNow, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ca.Issue(testNow, time.Hour, nil, nil); err == nil || !strings.Contains(err.Error(), "at least one DNS name or IP") {
		t.Errorf("err = %v, want one asking for a name", err)
	}
}

func TestParseAuthority(t *testing.T) {
	ca, err := NewAuthority("test-ca", testNow, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewAuthority("other-ca", testNow, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leafPEM, leafKey, err := ca.Issue(testNow, time.Hour, []string{"x.svc"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		cert, key []byte
		wantErr   string
	}{
		{name: "round trip", cert: ca.CertPEM, key: ca.KeyPEM},
		{name: "key of another authority", cert: ca.CertPEM, key: other.KeyPEM, wantErr: "does not match"},
		{name: "not a CA", cert: leafPEM, key: leafKey, wantErr: "not a CA"},
		{name: "empty certificate", key: ca.KeyPEM, wantErr: "no PEM CERTIFICATE block"},
		{name: "garbage key", cert: ca.CertPEM, key: []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), wantErr: "authority key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseAuthority(tc.cert, tc.key)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !got.Cert.Equal(ca.Cert) {
					t.Error("parsed a different certificate")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

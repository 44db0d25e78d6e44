package certs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
)

// writePair issues a certificate for name and writes it and its key.
func writePair(t *testing.T, ca *Authority, dir, name string) (certFile, keyFile string) {
	t.Helper()
	certPEM, keyPEM, err := ca.Issue(testNow, time.Hour, []string{name}, nil)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestNewFileSourceRefusesUnusableFiles(t *testing.T) {
	ca, err := NewAuthority("test-ca", testNow, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := writePair(t, ca, dir, "first.svc")
	tests := []struct {
		name              string
		certFile, keyFile string
		interval          time.Duration
		wantErr           string
	}{
		{name: "missing certificate", certFile: filepath.Join(dir, "nope.crt"), keyFile: keyFile, interval: time.Second, wantErr: "reading the certificate"},
		{name: "key as certificate", certFile: keyFile, keyFile: keyFile, interval: time.Second, wantErr: "loading the key pair"},
		{name: "no key file named", certFile: certFile, interval: time.Second, wantErr: "both a certificate file and a key file are required"},
		{name: "zero interval", certFile: certFile, keyFile: keyFile, wantErr: "reload interval must be positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewFileSource(tc.certFile, tc.keyFile, tc.interval, clocktesting.NewFakeClock(testNow))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestFileSourceReloadsChangedFiles(t *testing.T) {
	ca, err := NewAuthority("test-ca", testNow, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := writePair(t, ca, dir, "first.svc")
	clk := clocktesting.NewFakeClock(testNow)
	src, err := NewFileSource(certFile, keyFile, 10*time.Second, clk)
	if err != nil {
		t.Fatal(err)
	}
	if got := src.Leaf().DNSNames[0]; got != "first.svc" {
		t.Fatalf("serving %s, want first.svc", got)
	}

	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { src.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	// A certificate written without its key yet is not served.
	certPEM, keyPEM, err := ca.Issue(testNow, time.Hour, []string{"second.svc"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Reload(); err == nil {
		t.Error("reloading a certificate without its key succeeded")
	}
	if got := src.Leaf().DNSNames[0]; got != "first.svc" {
		t.Errorf("after a half-written pair serving %s, want still first.svc", got)
	}

	// Once the key follows, the next tick serves the new pair.
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		if clk.HasWaiters() {
			clk.Step(10 * time.Second)
		}
		return src.Leaf().DNSNames[0] == "second.svc", nil
	})
	if err != nil {
		t.Fatalf("the new certificate was not served: %v", err)
	}
	cert, err := src.GetCertificate(nil)
	if err != nil || cert.Leaf.DNSNames[0] != "second.svc" {
		t.Errorf("GetCertificate = %v, %v; want the second certificate", cert, err)
	}
	if changed, err := src.Reload(); changed || err != nil {
		t.Errorf("reloading unchanged files: changed=%v err=%v, want false, nil", changed, err)
	}
}

package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/internal/periodic"
)

// DefaultReloadInterval is how often FileSource looks at its files.
const DefaultReloadInterval = 10 * time.Second

// FileSource serves a certificate and key read from two PEM files, such as
// a mounted kubernetes.io/tls Secret, and reads them again when they change.
// It polls rather than watching for file events: the kubelet updates a
// mounted Secret by swapping a symbolic link, which file watches see only
// indirectly, while reading two small files every few seconds is cheap and
// always right.
type FileSource struct {
	servingCert

	certFile, keyFile string
	interval          time.Duration
	clock             clock.WithTicker

	mu                sync.Mutex
	lastCert, lastKey []byte
}

// NewFileSource reads the certificate and key once; an error means the
// server cannot start.
func NewFileSource(certFile, keyFile string, interval time.Duration, clk clock.WithTicker) (*FileSource, error) {
	if certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("both a certificate file and a key file are required, got %q and %q", certFile, keyFile)
	}
	if interval <= 0 {
		return nil, fmt.Errorf("certificate reload interval must be positive, got %v", interval)
	}
	s := &FileSource{certFile: certFile, keyFile: keyFile, interval: interval, clock: clk}
	if _, err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Run reloads the files every interval until ctx ends. A pair that does not
// load, such as a certificate written before its key, keeps the previous
// one serving and is tried again next time.
func (s *FileSource) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	periodic.Every(ctx, s.clock, s.interval, func() {
		changed, err := s.Reload()
		switch {
		case err != nil:
			logger.Error(err, "Reloading the serving certificate, keeping the previous one")
		case changed:
			logger.Info("Reloaded the serving certificate", "certFile", s.certFile, "notAfter", s.Leaf().NotAfter)
		}
	})
}

// Reload reads the files and serves them if they changed and form a valid
// pair. changed reports whether a new certificate is now served.
func (s *FileSource) Reload() (changed bool, err error) {
	certPEM, err := os.ReadFile(s.certFile)
	if err != nil {
		return false, fmt.Errorf("reading the certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(s.keyFile)
	if err != nil {
		return false, fmt.Errorf("reading the key: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if bytes.Equal(certPEM, s.lastCert) && bytes.Equal(keyPEM, s.lastKey) {
		return false, nil
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return false, fmt.Errorf("loading the key pair from %s and %s: %w", s.certFile, s.keyFile, err)
	}
	s.set(&pair)
	s.lastCert, s.lastKey = certPEM, keyPEM
	return true, nil
}

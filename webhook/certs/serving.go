package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"sync/atomic"
)

// Source is a serving certificate that may change while the server runs.
type Source interface {
	// GetCertificate fits tls.Config.GetCertificate.
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// Leaf is the current certificate, or nil before one is loaded.
	Leaf() *x509.Certificate
}

var (
	_ Source = (*FileSource)(nil)
	_ Source = (*SelfManaged)(nil)
)

// errNoCertificate is what a TLS handshake gets before the first certificate.
var errNoCertificate = errors.New("no serving certificate loaded yet")

// servingCert holds the current certificate; handshakes read it while a
// reload replaces it.
type servingCert struct {
	current atomic.Pointer[tls.Certificate]
}

// GetCertificate returns the current certificate.
func (s *servingCert) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c := s.current.Load()
	if c == nil {
		return nil, errNoCertificate
	}
	return c, nil
}

// Leaf returns the current certificate, parsed, or nil before one is loaded.
func (s *servingCert) Leaf() *x509.Certificate {
	if c := s.current.Load(); c != nil {
		return c.Leaf
	}
	return nil
}

func (s *servingCert) set(c *tls.Certificate) { s.current.Store(c) }

package httpserver

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestTLSRefusesCBC dials TLSConfig with TLS 1.2
// and one suite at a time: the CBC suites with SHA-1 are refused, the
// AEAD suites accepted.
func TestTLSRefusesCBC(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	// httptest adds its own RSA certificate to a configuration without one.
	srv.TLS = TLSConfig(nil)
	srv.StartTLS()
	defer srv.Close()
	tests := []struct {
		suite uint16
		ok    bool
	}{
		{tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, false},
		{tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA, false},
		{tls.TLS_RSA_WITH_AES_128_CBC_SHA, false},
		{tls.TLS_RSA_WITH_AES_256_CBC_SHA, false},
		{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, true},
		{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, true},
		{tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256, true},
	}
	for _, tc := range tests {
		t.Run(tls.CipherSuiteName(tc.suite), func(t *testing.T) {
			conn, err := tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{
				InsecureSkipVerify: true, // the suite is under test, not the certificate
				MaxVersion:         tls.VersionTLS12,
				CipherSuites:       []uint16{tc.suite},
			})
			if err == nil {
				conn.Close()
			}
			if (err == nil) != tc.ok {
				t.Errorf("handshake error %v, want accepted=%v", err, tc.ok)
			}
		})
	}
}

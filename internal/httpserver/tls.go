package httpserver

import "crypto/tls"

// TLSConfig is the TLS every daemon serves: version 1.2 or later, and with
// 1.2 only the ECDHE suites with AEAD ciphers; CBC and RSA key exchange
// suites (such as AES128-SHA) are refused. TLS 1.3's suites are all AEAD
// and are not configurable. getCertificate gives the serving certificate.
func TLSConfig(getCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		CipherSuites: []uint16{
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
			tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
		},
		GetCertificate: getCertificate,
	}
}

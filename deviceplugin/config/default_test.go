package config

import (
	"net"
	"testing"
)

// TestDefaultMetricsAddressIsLoopback pins that, with no flag or file,
// the metrics listener is not reachable from another machine.
func TestDefaultMetricsAddressIsLoopback(t *testing.T) {
	host, _, err := net.SplitHostPort(Default().MetricsAddress)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		t.Errorf("default metricsAddress %q is not loopback", Default().MetricsAddress)
	}
}

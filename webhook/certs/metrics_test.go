package certs

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestExpiryCollector(t *testing.T) {
	ca, err := NewAuthority("test-ca", testNow, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := writePair(t, ca, t.TempDir(), "x.svc")
	src, err := NewFileSource(certFile, keyFile, time.Second, clocktesting.NewFakeClock(testNow))
	if err != nil {
		t.Fatal(err)
	}
	collector := NewExpiryCollector(src)
	if got, want := testutil.ToFloat64(collector), float64(testNow.Add(time.Hour).Unix()); got != want {
		t.Errorf("expiry = %v, want %v", got, want)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

func TestExpiryCollectorBeforeACertificate(t *testing.T) {
	s, err := NewSelfManaged(testConfig(), nil, clocktesting.NewFakeClock(testNow))
	if err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(NewExpiryCollector(s)); n != 0 {
		t.Errorf("collected %d series before a certificate, want 0", n)
	}
}

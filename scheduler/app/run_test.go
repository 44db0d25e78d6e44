package app

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"

	"github.com/tessera-gpu/tessera/scheduler/options"
)

// serve runs Serve against an API server address nothing listens on: the
// informers never sync, which is all these tests need.
func serve(ctx context.Context, ln net.Listener) <-chan error {
	done := make(chan error, 1)
	unreachable := &rest.Config{Host: "http://127.0.0.1:1"}
	go func() { done <- Serve(ctx, options.NewConfig(), unreachable, ln) }()
	return done
}

func waitReturn(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return")
		return nil
	}
}

func TestServeNotReadyUntilSynced(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := serve(ctx, ln)
	base := "http://" + ln.Addr().String()
	tests := []struct {
		path   string
		status int
		body   string
	}{
		{"/healthz", http.StatusOK, "ok"},
		{"/readyz", http.StatusServiceUnavailable, "informers not synced"},
		{"/metrics", http.StatusOK, "tessera_extender_requests_total"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			if tc.path == "/metrics" {
				// A filter while not ready is answered and counted.
				http.Post(base+"/filter", "application/json", strings.NewReader(`{"Pod":{},"NodeNames":[]}`))
			}
			resp, err := http.Get(base + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.body) {
				t.Errorf("GET %s = %d %q, want %d with %q", tc.path, resp.StatusCode, body, tc.status, tc.body)
			}
		})
	}
	cancel()
	if err := waitReturn(t, done); err != nil {
		t.Errorf("Serve = %v after its context ended, want nil", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the listener is still open")
	}
}

func TestServeReturnsWhenTheListenerFails(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if err := waitReturn(t, serve(ctx, ln)); err == nil || !strings.Contains(err.Error(), "serving HTTP") {
		t.Errorf("Serve = %v, want the listener's error", err)
	}
}

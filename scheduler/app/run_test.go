package app

import (
	"context"
	"errors"
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
func serve(ctx context.Context, cfg *options.Config, ls Listeners) <-chan error {
	done := make(chan error, 1)
	unreachable := &rest.Config{Host: "http://127.0.0.1:1"}
	go func() { done <- Serve(ctx, cfg, unreachable, ls) }()
	return done
}

// serveBoth runs Serve with cfg on an extender and a metrics listener of
// its own until cancel is called; done gives what Serve returned.
func serveBoth(t *testing.T, cfg *options.Config) (ls Listeners, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel = context.WithCancel(ctx)
	ls = Listeners{Extender: listen(t), Metrics: listen(t)}
	return ls, cancel, serve(ctx, cfg, ls)
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func do(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(`{"Pod":{},"NodeNames":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
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
	ln := listen(t)
	done := serve(ctx, options.NewConfig(), Listeners{Extender: ln})
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
	if err := waitReturn(t, serve(ctx, options.NewConfig(), Listeners{Extender: ln})); err == nil || !strings.Contains(err.Error(), "serving HTTP") {
		t.Errorf("Serve = %v, want the listener's error", err)
	}
}

// TestMetricsListenerServesOnlyHealthAndMetrics pins that the second
// listener, which the pod's network reaches, answers the probes and
// Prometheus from the extender's own handlers and never the verbs that
// place or bind pods.
func TestMetricsListenerServesOnlyHealthAndMetrics(t *testing.T) {
	ls, cancel, done := serveBoth(t, options.NewConfig())
	extender, metrics := "http://"+ls.Extender.Addr().String(), "http://"+ls.Metrics.Addr().String()

	// A filter on the extender's listener is counted in the registry that
	// the metrics listener serves.
	if status, body := do(t, http.MethodPost, extender+"/filter"); status != http.StatusOK {
		t.Fatalf("POST /filter on the extender's listener = %d %q, want 200", status, body)
	}
	tests := []struct {
		name   string
		method string
		path   string
		status int
		body   string
	}{
		{"health", http.MethodGet, "/healthz", http.StatusOK, "ok"},
		{"readiness of the same informers", http.MethodGet, "/readyz", http.StatusServiceUnavailable, "informers not synced"},
		{"metrics of the same registry", http.MethodGet, "/metrics", http.StatusOK, `tessera_extender_requests_total{`},
		{"the build", http.MethodGet, "/metrics", http.StatusOK, `tessera_build_info{`},
		// Empty: the informers never sync, so the view has no GPU.
		{"state metrics", http.MethodGet, "/metrics/state", http.StatusOK, ""},
		{"no filter", http.MethodPost, "/filter", http.StatusNotFound, ""},
		{"no prioritize", http.MethodPost, "/prioritize", http.StatusNotFound, ""},
		{"no bind", http.MethodPost, "/bind", http.StatusNotFound, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body := do(t, tc.method, metrics+tc.path)
			if status != tc.status || !strings.Contains(body, tc.body) {
				t.Errorf("%s %s on the metrics listener = %d %q, want %d with %q", tc.method, tc.path, status, body, tc.status, tc.body)
			}
		})
	}
	// The bind verb is still there on the extender's own listener.
	if status, _ := do(t, http.MethodPost, extender+"/bind"); status == http.StatusNotFound {
		t.Errorf("POST /bind on the extender's listener = 404")
	}

	cancel()
	if err := waitReturn(t, done); err != nil {
		t.Errorf("Serve = %v after its context ended, want nil", err)
	}
	for _, ln := range []net.Listener{ls.Extender, ls.Metrics} {
		if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			t.Errorf("listener %s is still open", ln.Addr())
		}
	}
}

func TestServeReturnsWhenTheMetricsListenerFails(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ls := Listeners{Extender: listen(t), Metrics: listen(t)}
	ls.Metrics.Close()
	if err := waitReturn(t, serve(ctx, options.NewConfig(), ls)); err == nil || !strings.Contains(err.Error(), "serving HTTP on "+ls.Metrics.Addr().String()) {
		t.Errorf("Serve = %v, want the metrics listener's error", err)
	}
	if _, err := net.Dial("tcp", ls.Extender.Addr().String()); err == nil {
		t.Error("the extender's listener is still open")
	}
}

func TestProfilingOnlyWhenEnabled(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		t.Run(map[bool]string{false: "off", true: "on"}[enabled], func(t *testing.T) {
			cfg := options.NewConfig()
			cfg.EnableProfiling = enabled
			ls, cancel, done := serveBoth(t, cfg)

			want := http.StatusNotFound
			if enabled {
				want = http.StatusOK
			}
			status, body := do(t, http.MethodGet, "http://"+ls.Extender.Addr().String()+"/debug/pprof/")
			if status != want || (enabled && !strings.Contains(body, "goroutine")) {
				t.Errorf("GET /debug/pprof/ on the extender's listener = %d, want %d with the profile index", status, want)
			}
			// The metrics listener, which the pod's network reaches, never
			// serves profiles.
			if status, _ := do(t, http.MethodGet, "http://"+ls.Metrics.Addr().String()+"/debug/pprof/"); status != http.StatusNotFound {
				t.Errorf("GET /debug/pprof/ on the metrics listener = %d, want 404", status)
			}
			cancel()
			if err := waitReturn(t, done); err != nil {
				t.Errorf("Serve = %v", err)
			}
		})
	}
}

// TestSlowClientsAreCut opens 100 connections to each listener that send
// the header of a 1,000-byte filter call and one byte of its body, and
// waits for the extender to close every one.
func TestSlowClientsAreCut(t *testing.T) {
	ls, cancel, done := serveBoth(t, options.NewConfig())
	const each = 100
	closed := make(chan error, 2*each)
	for _, ln := range []net.Listener{ls.Extender, ls.Metrics} {
		for range each {
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"); err != nil {
				t.Fatal(err)
			}
			go func() {
				// Only the server can end this; the client's own
				// deadline stops a test whose server never would.
				conn.SetReadDeadline(time.Now().Add(2 * time.Minute))
				_, err := io.Copy(io.Discard, conn)
				closed <- err
			}()
		}
	}
	for range 2 * each {
		var ne net.Error
		if err := <-closed; errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("the extender kept a trickling connection open for two minutes")
		}
	}
	cancel()
	if err := waitReturn(t, done); err != nil {
		t.Errorf("Serve = %v", err)
	}
}

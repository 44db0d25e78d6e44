package viewsync

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"

	"github.com/tessera-gpu/tessera/scheduler/options"
)

// noRequeue is told nothing worth doing.
type noRequeue struct{}

func (noRequeue) Freed(string)     {}
func (noRequeue) Forget(types.UID) {}

// start starts a keeper against an API server address nothing listens on:
// the informers never sync, which is all these tests need.
func start(t *testing.T, cfg *options.Config) (context.Context, *Keeper) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	k, err := New(Config{Options: cfg, RestConfig: &rest.Config{Host: "http://127.0.0.1:1"}, SchedulerName: "test", FieldManager: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Start(ctx, noRequeue{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		k.Stop()
	})
	return ctx, k
}

// get returns the answer's status and body.
func get(t *testing.T, url string) (string, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.Status, string(body)
}

// TestServeMetrics checks the metrics listener of a front end without a
// server of its own: the same health, readiness and state as the
// extender's, and the build's series under the front end's name.
func TestServeMetrics(t *testing.T) {
	cfg := options.NewConfig()
	cfg.MetricsAddress = "127.0.0.1:0"
	ctx, k := start(t, cfg)
	addr, err := k.ServeMetrics(ctx, "plugin")
	if err != nil {
		t.Fatal(err)
	}
	// Each answer as status and a part of the body.
	want := map[string][]string{
		"/healthz":       {"200 OK", "ok"},
		"/readyz":        {"503 Service Unavailable", "informers not synced"},
		"/metrics":       {"200 OK", `tessera_build_info{build_date=`, `component="plugin"`},
		StateMetricsPath: {"200 OK"},
		"/bind":          {"404 Not Found"},
	}
	for path, parts := range want {
		t.Run(path, func(t *testing.T) {
			status, body := get(t, "http://"+addr.String()+path)
			if status != parts[0] {
				t.Errorf("GET %s = %s, want %s", path, status, parts[0])
			}
			for _, part := range parts[1:] {
				if !strings.Contains(body, part) {
					t.Errorf("GET %s lacks %q:\n%s", path, part, body)
				}
			}
		})
	}
}

// TestServeMetricsOff checks that without a metrics address nothing
// listens, and that an address in use fails the front end, naming it.
func TestServeMetricsOff(t *testing.T) {
	cfg := options.NewConfig()
	cfg.MetricsAddress = ""
	ctx, k := start(t, cfg)
	if addr, err := k.ServeMetrics(ctx, "plugin"); addr != nil || err != nil {
		t.Errorf("ServeMetrics without an address = %v, %v; want nothing served", addr, err)
	}

	cfg = options.NewConfig()
	cfg.MetricsAddress = "127.0.0.1:0"
	ctx, k = start(t, cfg)
	addr, err := k.ServeMetrics(ctx, "plugin")
	if err != nil {
		t.Fatal(err)
	}
	cfg.MetricsAddress = addr.String()
	ctx, again := start(t, cfg)
	if _, err := again.ServeMetrics(ctx, "plugin"); err == nil || !strings.Contains(err.Error(), "listening on the metrics address "+addr.String()) {
		t.Errorf("ServeMetrics on an address in use = %v, want an error naming it", err)
	}
}

package viewsync

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/internal/httpserver"
	"github.com/tessera-gpu/tessera/internal/version"
	"github.com/tessera-gpu/tessera/scheduler/metrics"
)

// StateMetricsPath serves the per-GPU and per-node series (and with
// allocationMetrics the per-allocation ones), hundreds of thousands at
// fleet size, apart from /metrics, so that /metrics can be scraped in any
// format and more often.
const StateMetricsPath = "/metrics/state"

// NewRegistry returns a registry with the Go runtime's, the process's and
// the build's collectors; component names the front end in
// tessera_build_info.
func NewRegistry(component string) (*prometheus.Registry, error) {
	registry := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		version.NewCollector(component),
	} {
		if err := registry.Register(c); err != nil {
			return nil, fmt.Errorf("registering metrics: %w", err)
		}
	}
	return registry, nil
}

// NewRegistry is the package's NewRegistry with the keeper's own series:
// with gang-fit, whether this process decides the checks.
func (k *Keeper) NewRegistry(component string) (*prometheus.Registry, error) {
	registry, err := NewRegistry(component)
	if err != nil || !k.opts.GangFit.Enabled {
		return registry, err
	}
	leader := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "tessera_gang_fit_leader",
		Help: "1 while this scheduler process holds the gang-fit Lease and decides Kueue's gang-fit checks; every process holds the room of Workloads already admitted.",
	}, func() float64 {
		if g := k.gangFit.Load(); g != nil && g.Leading() {
			return 1
		}
		return 0
	})
	if err := registry.Register(leader); err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	return registry, nil
}

// AddEndpoints adds /healthz, /readyz, /metrics (served by registry, a
// metrics.RegistryHandler) and /metrics/state (the view's series) to mux.
// Every listener that serves them gets the same handlers, so all report
// the same readiness and series.
func (k *Keeper) AddEndpoints(mux *http.ServeMux, registry http.Handler) {
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", k.readyz)
	mux.Handle("GET /metrics", registry)
	mux.Handle("GET "+StateMetricsPath, k.state)
}

// ServeMetrics listens on the metrics address of the options, when they
// set one, and serves AddEndpoints there with a registry of its own until
// ctx ends: the metrics listener of a front end that has no server of its
// own, such as the plugin inside kube-scheduler. It returns the address it
// listens on, nil with none. Only listening and registering fail it; a
// later failure is logged.
func (k *Keeper) ServeMetrics(ctx context.Context, component string) (net.Addr, error) {
	addr := k.opts.MetricsAddress
	if addr == "" {
		return nil, nil
	}
	registry, err := k.NewRegistry(component)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	k.AddEndpoints(mux, metrics.RegistryHandler(registry))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on the metrics address %s: %w", addr, err)
	}
	logger := klog.FromContext(ctx)
	logger.Info("Serving metrics and health", "address", ln.Addr().String())
	server := httpserver.New(ctx, mux, httpserver.DefaultTimeouts())
	k.wg.Go(func() {
		if err := httpserver.Serve(ctx, 5*time.Second, httpserver.Listener{Server: server, Listener: ln}); err != nil {
			logger.Error(err, "Serving metrics failed", "address", ln.Addr().String())
		}
	})
	return ln.Addr(), nil
}

func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Write([]byte("ok\n"))
}

// readyz answers 200 once the informers have synced: before that the
// front end would place pods on a partial view of the GPUs.
func (k *Keeper) readyz(w http.ResponseWriter, _ *http.Request) {
	if !k.HasSynced() {
		http.Error(w, "informers not synced", http.StatusServiceUnavailable)
		return
	}
	w.Write([]byte("ok\n"))
}

package app

import (
	"net/http"
	"net/http/pprof"
)

// StateMetricsPath serves the per-GPU and per-node series (and with
// --allocation-metrics the per-allocation ones), hundreds of thousands at
// fleet size, apart from /metrics, so that /metrics can be scraped in any
// format and more often.
const StateMetricsPath = "/metrics/state"

// addOperationalEndpoints adds /healthz, /readyz, /metrics and
// /metrics/state to mux. The extender's listener and the metrics listener
// get the same handlers, so both report the same readiness and the same
// registry.
func (s *server) addOperationalEndpoints(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", s.metrics)
	mux.Handle("GET "+StateMetricsPath, s.stateMetrics)
}

// addProfiling adds /debug/pprof/ to mux: the extender's listener only,
// which is loopback or behind a client certificate, since a profile shows
// the process's memory and costs its CPU.
func addProfiling(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}

func (s *server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Write([]byte("ok\n"))
}

// readyz answers 200 once the informers have synced: before that the
// extender would place pods on a partial view of the GPUs.
func (s *server) readyz(w http.ResponseWriter, _ *http.Request) {
	if !s.tracker.HasSynced() {
		http.Error(w, "informers not synced", http.StatusServiceUnavailable)
		return
	}
	w.Write([]byte("ok\n"))
}

package app

import "net/http"

// addOperationalEndpoints adds /healthz, /readyz and /metrics to mux. The
// extender's listener and the metrics listener get the same handlers, so
// both report the same readiness and the same registry.
func (s *server) addOperationalEndpoints(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", s.metrics)
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

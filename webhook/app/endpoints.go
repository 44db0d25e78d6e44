package app

import (
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// addOperationalEndpoints adds /healthz, /readyz and /metrics.
func (s *Server) addOperationalEndpoints(mux *http.ServeMux) {
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := s.ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.Handle("/metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
}

// ready reports what still keeps the webhook from answering correctly.
func (s *Server) ready() error {
	var errs []error
	if !s.synced.Load() {
		errs = append(errs, errors.New("namespace, GPUNode and ResourceClaimTemplate informers have not synced"))
	}
	if err := s.certsReady(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

package app

import (
	"net/http"
	"net/http/pprof"
)

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

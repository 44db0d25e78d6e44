package app

import (
	"context"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// httpServer returns a server whose requests carry the daemon's logger but
// are not cancelled with it: Shutdown lets them finish.
func (s *Server) httpServer(ctx context.Context, h http.Handler) *http.Server {
	base := context.WithoutCancel(ctx)
	return &http.Server{
		Handler:           h,
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       90 * time.Second,
		ErrorLog:          log.New(errorLogWriter{klog.FromContext(ctx)}, "", 0),
	}
}

// errorLogWriter sends net/http's own messages, such as failed TLS
// handshakes, to the structured log.
type errorLogWriter struct{ logger klog.Logger }

func (w errorLogWriter) Write(p []byte) (int, error) {
	w.logger.V(2).Info("HTTP server", "message", strings.TrimSpace(string(p)))
	return len(p), nil
}

package httpserver

import (
	"context"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// Timeouts bound how long a client may hold a connection.
type Timeouts struct {
	// ReadHeader bounds reading a request's header.
	ReadHeader time.Duration
	// Read bounds reading a whole request, header and body: a client that
	// trickles its body is cut off after it. net/http lifts the deadline
	// once the body is read, so it does not cut a handler that takes
	// longer to answer (a bind waiting for its node).
	Read time.Duration
	// Write bounds a request's handling and answer, from the end of its
	// header; it must exceed the longest a handler may take.
	Write time.Duration
	// Idle bounds how long a kept-alive connection waits for its next
	// request.
	Idle time.Duration
}

// DefaultTimeouts suit a daemon whose every answer is computed at once.
func DefaultTimeouts() Timeouts {
	return Timeouts{ReadHeader: 10 * time.Second, Read: 15 * time.Second, Write: 30 * time.Second, Idle: 90 * time.Second}
}

// New returns a server for h with the timeouts, whose requests' contexts
// derive from base, and whose own messages (failed TLS handshakes, panics
// in handlers) go to base's logger.
func New(base context.Context, h http.Handler, t Timeouts) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          log.New(errorLogWriter{klog.FromContext(base)}, "", 0),
	}
}

// errorLogWriter sends net/http's own messages to the structured log.
type errorLogWriter struct{ logger klog.Logger }

func (w errorLogWriter) Write(p []byte) (int, error) {
	w.logger.V(2).Info("HTTP server", "message", strings.TrimSpace(string(p)))
	return len(p), nil
}

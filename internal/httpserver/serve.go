package httpserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/klog/v2"
)

// Listener is a server and the socket it serves; a server with a
// TLSConfig serves TLS, its certificate from TLSConfig.
type Listener struct {
	Server   *http.Server
	Listener net.Listener
}

// Serve serves every server on its listener until ctx ends or one of them
// fails, then shuts them all down: requests in flight get grace to
// finish, and whatever is left is closed. It returns the first failure.
func Serve(ctx context.Context, grace time.Duration, ls ...Listener) error {
	failed := make(chan error, len(ls))
	for _, l := range ls {
		go func() {
			var err error
			if l.Server.TLSConfig != nil {
				err = l.Server.ServeTLS(l.Listener, "", "")
			} else {
				err = l.Server.Serve(l.Listener)
			}
			if !errors.Is(err, http.ErrServerClosed) {
				failed <- fmt.Errorf("serving HTTP on %s: %w", l.Listener.Addr(), err)
			}
		}()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-failed:
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	for _, l := range ls {
		if serr := l.Server.Shutdown(shutdownCtx); serr != nil {
			klog.FromContext(ctx).V(2).Info("Closing HTTP connections still open after the shutdown grace", "address", l.Listener.Addr().String(), "grace", grace)
			l.Server.Close()
		}
	}
	return err
}

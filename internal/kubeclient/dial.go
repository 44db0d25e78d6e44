package kubeclient

import (
	"context"
	"errors"
	"net"
	"net/http"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// Waiting while the API server restarts.
const (
	// DialRetry is how often a connection is tried again while nothing
	// listens at the API server's address, and a request while the API
	// server answers that it cannot serve it yet.
	DialRetry = 200 * time.Millisecond
	// DialPatience is how long a connection waits for the API server to
	// listen again, and a request for it to serve, before the error is
	// returned. It matches the longest back-off of client-go's informers:
	// an API server away for longer is down, not restarting, and their
	// back-off is what it needs.
	DialPatience = 30 * time.Second
)

// WaitForRestarts makes the requests of a copy of config wait while the
// API server restarts, instead of failing or backing off for seconds: while
// nothing listens at its address ("connection refused"), and while it
// answers 503 with a Retry-After header, as kube-apiserver does while it
// shuts down and while it starts, until it serves every path (custom
// resources' last). client-go's informers meet "connection refused" with an
// exponential back-off (0.8 s doubling to 30 s, up to twice that with
// jitter) that resets only after two minutes without errors, and client-go
// waits the advertised Retry-After (5 s) before each retry of a 503; a
// retry that falls into the next restart waits again. So a restart of a few
// seconds, or a second one soon after, leaves watches down for tens of
// seconds: pods deleted meanwhile keep their GPUs and served allocations
// keep their node's turn. With this, a request goes through within
// DialRetry of the API server serving it.
func WaitForRestarts(config *rest.Config, clk clock.Clock) *rest.Config {
	config = rest.CopyConfig(config)
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &waitForServing{next: rt, clock: clk} })
	dial := config.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	config.Dial = func(ctx context.Context, network, address string) (net.Conn, error) {
		deadline := clk.Now().Add(DialPatience)
		for {
			conn, err := dial(ctx, network, address)
			if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || !clk.Now().Before(deadline) {
				return conn, err
			}
			select {
			case <-ctx.Done():
				return nil, err
			case <-clk.After(DialRetry):
			}
		}
	}
	return config
}

package kubeclient

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// Dialing while the API server restarts.
const (
	// DialRetry is how often a connection is tried again while nothing
	// listens at the API server's address.
	DialRetry = 200 * time.Millisecond
	// DialPatience is how long a connection waits for the API server to
	// listen again before the error is returned. It matches the longest
	// back-off of client-go's informers: an API server away for longer is
	// down, not restarting, and their back-off is what it needs.
	DialPatience = 30 * time.Second
)

// WaitForRestarts makes the connections of a copy of config wait while
// nothing listens at the API server's address, as while it restarts,
// instead of failing at once with "connection refused". client-go's
// informers meet that error with an exponential back-off (0.8 s doubling
// to 30 s, up to twice that with jitter) that resets only after two
// minutes without errors, so a restart of a few seconds, or a second one
// soon after, leaves their watches down for tens of seconds: pods deleted
// meanwhile keep their GPUs and served allocations keep their node's turn.
// With this, a watch resumes within DialRetry of the API server listening.
func WaitForRestarts(config *rest.Config, clk clock.Clock) *rest.Config {
	config = rest.CopyConfig(config)
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

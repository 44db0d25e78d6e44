// Package periodic runs work on the ticks of a clock, which tests fake.
package periodic

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Every calls fn every period of clk until ctx ends, the first time one
// period from now. A call that outlasts a period delays the next tick; no
// ticks pile up.
func Every(ctx context.Context, clk clock.WithTicker, period time.Duration, fn func()) {
	ticker := clk.NewTicker(period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			fn()
		}
	}
}

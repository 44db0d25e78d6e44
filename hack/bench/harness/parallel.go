package harness

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// ForEach calls fn for 0 ≤ i < n with at most workers calls at once, and
// returns the first error, after which no new call starts.
func ForEach(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i := range n {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(gctx, i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	// The group's context ends when Wait returns; the caller's says
	// whether the loop was cut short.
	return context.Cause(ctx)
}

// MaxFinishing bounds the pods the bench ends at once.
const MaxFinishing = 64

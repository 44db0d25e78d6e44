package plugin

import (
	"context"
	"sync/atomic"
	"time"

	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
)

const (
	// parksPerSecond bounds the writes that park pods, so that a burst of
	// thousands of pods held at once is parked over seconds, not in one
	// storm of writes.
	parksPerSecond = 500
	// busyParksPerSecond bounds them while pods are being placed: for
	// busyFor after the gate releases a pod, a pending pod is bound, or
	// any pod of the profile is deleted (an ending pod frees room).
	busyParksPerSecond = 10
	busyFor            = time.Second
)

// parkPace paces the parks. Parking is bookkeeping that can wait: the
// screen hides a held pod from kube-scheduler long before its label is
// written. Placing pods cannot: each placement's binding, allocation and
// unpark are writes to the same API server, and so are the frees it
// hears of. In a first start over 180,000 held pods at 5,000 nodes,
// parks at 500 a second kept kube-apiserver busy for minutes and the
// median free waited at least 16 s for its pod; at 50 a second, under a
// second. At 1,000 nodes, 10 a second instead of 50 took the 99th
// percentile free from 2.8 s to 1.3 s (docs/benchmark.md). So parks
// slow to busyParksPerSecond while pods are placed, and take the rest of
// the API server's time when none are. A pod not parked yet costs
// kube-scheduler nothing while this scheduler leads; only a new leader
// meets it, and judges it in its first pass.
type parkPace struct {
	clock clock.PassiveClock
	idle  flowcontrol.RateLimiter
	busy  flowcontrol.RateLimiter
	// placed is when a pod was last released or left the pending pods, in
	// Unix nanoseconds.
	placed atomic.Int64
}

func newParkPace(clk clock.PassiveClock) *parkPace {
	return &parkPace{
		clock: clk,
		idle:  flowcontrol.NewTokenBucketRateLimiter(parksPerSecond, parksPerSecond),
		busy:  flowcontrol.NewTokenBucketRateLimiter(busyParksPerSecond, busyParksPerSecond),
	}
}

// placing notes that a pod is being placed: released by the gate, or
// gone from the pending pods.
func (p *parkPace) placing() {
	p.placed.Store(p.clock.Now().UnixNano())
}

// wait waits for a park's turn, or until ctx ends, which it returns.
func (p *parkPace) wait(ctx context.Context) error {
	if err := p.idle.Wait(ctx); err != nil {
		return err
	}
	if p.clock.Since(time.Unix(0, p.placed.Load())) < busyFor {
		return p.busy.Wait(ctx)
	}
	return nil
}

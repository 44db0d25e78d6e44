package waiters

import (
	"context"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
)

// placingFor is how long pods count as being placed after the last sign
// of it.
const placingFor = time.Second

// Placing notes whether pods are being placed now, so that bookkeeping
// writes (parking held pods, telling them why they wait) make way for
// the writes that place pods: each placement's allocation, binding and
// unpark go to the same API server, and so do the frees it hears of.
// Under a deep backlog the API server is what a freed GPU waits on: at
// 1,000 nodes, parks at 10 a second instead of 50 while pods were placed
// took the 99th percentile free from 2.8 s to 1.3 s (docs/benchmark.md).
// Pods count as placed for placingFor after the gate releases one, a
// pending pod is bound, or a pod is deleted (an ending pod frees room).
type Placing struct {
	clock clock.PassiveClock
	// last is when pods were last seen placed, in Unix nanoseconds.
	last atomic.Int64
}

// NewPlacing notes placements by clk.
func NewPlacing(clk clock.PassiveClock) *Placing {
	return &Placing{clock: clk}
}

// Now notes that a pod is being placed.
func (p *Placing) Now() {
	p.last.Store(p.clock.Now().UnixNano())
}

// Held hears the gate start or stop holding a pod (Queue.OnHeld): a pod
// released is on its way to be placed.
func (p *Placing) Held(_ *v1.Pod, held bool) {
	if !held {
		p.Now()
	}
}

// Handler notes placements from an informer on pods: a pending pod bound,
// or any pod deleted, which is how a pod bound leaves an informer on
// pending pods.
func (p *Placing) Handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, obj any) {
			was, _ := old.(*v1.Pod)
			if pod, ok := obj.(*v1.Pod); ok && was != nil && was.Spec.NodeName == "" && pod.Spec.NodeName != "" {
				p.Now()
			}
		},
		DeleteFunc: func(any) { p.Now() },
	}
}

// busy reports whether pods are being placed now.
func (p *Placing) busy() bool {
	return p != nil && p.clock.Since(time.Unix(0, p.last.Load())) < placingFor
}

// Pace paces one kind of bookkeeping write: at most idle a second, and at
// most busy a second while pods are placed.
type Pace struct {
	placing    *Placing
	idle, busy flowcontrol.RateLimiter
}

// NewPace paces writes at idle a second, and at busy a second while
// placing says pods are placed; a nil placing is never busy.
func NewPace(placing *Placing, idle, busy int) *Pace {
	return &Pace{
		placing: placing,
		idle:    flowcontrol.NewTokenBucketRateLimiter(float32(idle), idle),
		busy:    flowcontrol.NewTokenBucketRateLimiter(float32(busy), busy),
	}
}

// Wait waits for a write's turn, or until ctx ends, which it returns.
func (p *Pace) Wait(ctx context.Context) error {
	if err := p.idle.Wait(ctx); err != nil {
		return err
	}
	if p.placing.busy() {
		return p.busy.Wait(ctx)
	}
	return nil
}

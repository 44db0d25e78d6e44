package plugin

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/deviceplugin/allocator"
	"github.com/tessera-gpu/tessera/deviceplugin/dra"
	"github.com/tessera-gpu/tessera/deviceplugin/dynamicmig"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/inventory"
)

const (
	// migReconcilePeriod is how often the MIG instances no live
	// allocation needs are looked for and destroyed.
	migReconcilePeriod = 5 * time.Second
	// migGrace is how long an instance just made is kept although no
	// allocation in the caches needs it yet: the kubelet allocated it for
	// a pod that the caches see within moments, and a pod that ended
	// before a reconcile saw it loses its instance this much later.
	migGrace = 15 * time.Second
)

// migManager returns, with dynamicMIG, what makes the MIG instances the
// scheduler places; nil without, or when the backend cannot make them.
func (p *Plugin) migManager(ctx context.Context) *dynamicmig.Manager {
	if !p.cfg.DynamicMIG {
		return nil
	}
	maker, ok := p.deps.Backend.(gpu.MIGMaker)
	if !ok {
		klog.FromContext(ctx).Error(errors.New("the GPU backend cannot make MIG instances"), "MIG instances are not made on demand; pods placed on them fail to start")
		return nil
	}
	return dynamicmig.New(maker, p.deps.Clock, migGrace)
}

// migPreparer returns, in device-plugin mode with dynamicMIG, what makes
// the MIG instances the scheduler places, and starts destroying those no
// live allocation needs; nil without.
func (p *Plugin) migPreparer(ctx context.Context, g *errgroup.Group, inv *inventory.Inventory, caches *caches) allocator.MIGPreparer {
	m := p.migManager(ctx)
	if m == nil {
		return nil
	}
	live := dynamicmig.Live{NodeName: p.cfg.NodeName, Allocations: caches.allocations.List, Pods: caches.pods}
	g.Go(func() error {
		m.Run(ctx, p.deps.Clock, migReconcilePeriod, live.Needed, inv.Devices)
		return nil
	})
	return m
}

// draMIG returns, in DRA mode with dynamicMIG, what makes the MIG
// instances of the claims kube-scheduler allocated; nil without.
func (p *Plugin) draMIG(ctx context.Context) dra.MIGMaker {
	if m := p.migManager(ctx); m != nil {
		return m
	}
	return nil
}

// reconcileDRAMIG destroys, in DRA mode with dynamicMIG, the MIG
// instances no prepared claim holds: of a daemon that stopped between
// making an instance and recording it, or of a claim whose instance
// could not be destroyed when it was unprepared.
func (p *Plugin) reconcileDRAMIG(ctx context.Context, g *errgroup.Group, inv *inventory.Inventory, driver *dra.Driver) {
	m, ok := driver.MIG().(*dynamicmig.Manager)
	if !ok {
		return
	}
	g.Go(func() error {
		m.Run(ctx, p.deps.Clock, migReconcilePeriod, driver.NeededMIG, inv.Devices)
		return nil
	})
}

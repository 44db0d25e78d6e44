package plugin

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
)

// Factory builds the plugin for a profile, as kube-scheduler's registry
// calls it.
type Factory = func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error)

// Factories are the plugins' factories to register with kube-scheduler:
// app.WithPlugin(Name, f.Tessera), app.WithPlugin(FitGateName, f.FitGate)
// and app.WithPlugin(DRAFitGateName, f.DRAFitGate).
type Factories struct {
	// Tessera builds the plugin for the first profile that enables it
	// and refuses every other, naming both, so that the scheduler does
	// not start: each plugin keeps its own view of the GPUs and its own
	// one-pod-per-node gate, and two profiles would each give away GPUs
	// the other had already given.
	Tessera Factory
	// FitGate builds the fit gate over the Tessera plugin of its profile,
	// built before it or after.
	FitGate Factory
	// DRAFitGate builds the fit gate of DRA mode.
	DRAFitGate Factory
}

// NewFactories returns the factories of one tessera-scheduler. With
// parking, the fit gates park the pods they hold outside kube-scheduler's
// queue.
func NewFactories(parking *Parking) Factories {
	var built atomic.Pointer[Plugin]
	return Factories{
		Tessera: onlyOneProfile(func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			pl, err := New(ctx, obj, h, parking)
			if p, ok := pl.(*Plugin); ok && err == nil {
				built.Store(p)
			}
			return pl, err
		}),
		FitGate: func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
			return &FitGate{tessera: &built}, nil
		},
		DRAFitGate: func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			return NewDRAFitGate(ctx, obj, h, parking)
		},
	}
}

// onlyOneProfile wraps build so that it builds the plugin for one profile
// only.
func onlyOneProfile(build Factory) Factory {
	var (
		mu    sync.Mutex
		first string
		built bool
	)
	return func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		mu.Lock()
		defer mu.Unlock()
		if built {
			return nil, fmt.Errorf("profiles %q and %q both enable the %s plugin: enable it in one profile only, since each profile would keep its own view of the GPUs and give away GPUs the other has given", first, h.ProfileName(), Name)
		}
		built, first = true, h.ProfileName()
		return build(ctx, obj, h)
	}
}

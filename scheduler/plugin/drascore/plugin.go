package drascore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/quota"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = "TesseraDRA"

var (
	_ fwk.PreScorePlugin  = (*Plugin)(nil)
	_ fwk.ScorePlugin     = (*Plugin)(nil)
	_ fwk.ScoreExtensions = (*Plugin)(nil)
)

// Plugin ranks the nodes DynamicResources found for a pod's claims of
// Tessera's GPUs by the node policy.
type Plugin struct {
	args *args
	// dra is kube-scheduler's view of the claims, slices and classes,
	// shared with DynamicResources.
	dra fwk.SharedDRAManager
	// gpus keeps the slices' GPUs between pods.
	gpus sliceGPUs
	// scorers hold scratch memory for Score and Filter, which
	// kube-scheduler runs on many nodes at once.
	scorers sync.Pool
	// quotas are the namespaces' GPU limits, and waiting the pods they
	// turned away, which activator moves to the active queue.
	quotas    quota.Source
	waiting   waiting
	activator fwk.PodActivator
}

// scorer is the scratch memory of one Score call: the node's GPUs with
// their usage, and the placement engine.
type scorer struct {
	node   placement.Node
	fitter placement.Fitter
}

// New builds the plugin from its arguments (see args) over the handle's
// DRA manager and an informer on ResourceQuotas from its informer
// factory; it refuses to build when the scheduler has no DRA manager,
// that is without the DynamicResourceAllocation feature.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	a, err := decodeArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s plugin arguments: %w", Name, err)
	}
	dra := h.SharedDRAManager()
	if dra == nil {
		return nil, errors.New(Name + " needs kube-scheduler's DynamicResourceAllocation feature, which is off")
	}
	quotas := h.SharedInformerFactory().Core().V1().ResourceQuotas()
	p := newPlugin(a, dra, quota.NewLister(quotas.Lister()), h)
	if _, err := quotas.Informer().AddEventHandler(p.quotaHandler(ctx)); err != nil {
		return nil, fmt.Errorf("watching ResourceQuotas: %w", err)
	}
	if _, err := h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: p.podGone}); err != nil {
		return nil, fmt.Errorf("watching pods: %w", err)
	}
	return p, nil
}

func newPlugin(a *args, dra fwk.SharedDRAManager, quotas quota.Source, activator fwk.PodActivator) *Plugin {
	return &Plugin{
		args: a, dra: dra, quotas: quotas, activator: activator,
		scorers: sync.Pool{New: func() any { return new(scorer) }},
	}
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

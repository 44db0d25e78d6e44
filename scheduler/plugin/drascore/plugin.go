package drascore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tessera-gpu/tessera/scheduler/placement"
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
	// scorers hold scratch memory for Score, which kube-scheduler runs on
	// many nodes at once.
	scorers sync.Pool
}

// scorer is the scratch memory of one Score call: the node's GPUs with
// their usage, and the placement engine.
type scorer struct {
	node   placement.Node
	fitter placement.Fitter
}

// New builds the plugin from its arguments (see args) over the handle's
// DRA manager; it refuses to build when the scheduler has none, that is
// without the DynamicResourceAllocation feature.
func New(_ context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	a, err := decodeArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s plugin arguments: %w", Name, err)
	}
	dra := h.SharedDRAManager()
	if dra == nil {
		return nil, errors.New(Name + " needs kube-scheduler's DynamicResourceAllocation feature, which is off")
	}
	return newPlugin(a, dra), nil
}

func newPlugin(a *args, dra fwk.SharedDRAManager) *Plugin {
	return &Plugin{args: a, dra: dra, scorers: sync.Pool{New: func() any { return new(scorer) }}}
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

package freememory

import (
	"context"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
	listers "github.com/tessera-gpu/tessera/generated/listers/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/periodic"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

const (
	// Interval is how often the GPUNodes are compared with the view.
	Interval = 5 * time.Second
	// MaxWrites bounds the GPUNodes written each Interval (5 a second);
	// the rest are written in the rounds after.
	MaxWrites = 25
)

// Publisher keeps every GPUNode's status.freeMemoryMiB close to the view.
type Publisher struct {
	view         *view.View
	nodes        listers.GPUNodeLister
	tessera      versioned.Interface
	clock        clock.WithTicker
	ready        func() bool
	fieldManager string
}

// New returns a publisher that compares view with the GPUNodes in nodes,
// once ready reports the view synced, and writes through tessera.
func New(v *view.View, nodes listers.GPUNodeLister, tessera versioned.Interface, clk clock.WithTicker, ready func() bool, fieldManager string) *Publisher {
	return &Publisher{view: v, nodes: nodes, tessera: tessera, clock: clk, ready: ready, fieldManager: fieldManager}
}

// Run publishes every Interval until ctx ends.
func (p *Publisher) Run(ctx context.Context) {
	periodic.Every(ctx, p.clock, Interval, func() { p.Publish(ctx) })
}

// Publish writes the free memory of the nodes whose GPUNode says otherwise,
// at most MaxWrites of them, and returns how many it wrote. Errors are
// logged: the next round tries again.
func (p *Publisher) Publish(ctx context.Context) int {
	if !p.ready() {
		return 0
	}
	free := map[string]int64{}
	p.view.Each(func(n *view.Node) { free[n.Placement.Name] = n.Placement.FreeMemoryMiB() }, nil)
	logger := klog.FromContext(ctx)
	written := 0
	for name, mib := range free {
		if written == MaxWrites {
			logger.V(4).Info("Free memory of more nodes changed than one round writes", "max", MaxWrites)
			break
		}
		gn, err := p.nodes.Get(name)
		// A DRA node's daemon publishes its own free memory from the
		// ResourceClaims, which the view does not hold.
		if err != nil || gn.Status.KubeletAPI == gpuv1alpha1.KubeletAPIDRA ||
			(gn.Status.FreeMemoryMiB != nil && *gn.Status.FreeMemoryMiB == mib) {
			continue
		}
		written++
		if err := p.write(ctx, name, mib); err != nil {
			logger.V(2).Info("Publishing a node's free GPU memory failed", "node", name, "err", err)
		}
	}
	return written
}

// write sets the GPUNode's free memory. A GPUNode deleted meanwhile is
// left alone; its node leaves the view too.
func (p *Publisher) write(ctx context.Context, name string, mib int64) error {
	patch := `{"status":{"freeMemoryMiB":` + strconv.FormatInt(mib, 10) + `}}`
	_, err := p.tessera.GpuV1alpha1().GPUNodes().Patch(ctx, name, types.MergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: p.fieldManager}, "status")
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patching GPUNode %s status: %w", name, err)
	}
	return nil
}

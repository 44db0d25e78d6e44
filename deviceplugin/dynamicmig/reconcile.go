package dynamicmig

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/internal/periodic"
)

// Live reads, from the node's caches, which MIG instances live
// allocations hold.
type Live struct {
	// NodeName is the node.
	NodeName string
	// Allocations lists the node's GPUAllocations, which must not be
	// changed (allocator.NodeAllocations.List).
	Allocations func() []*gpuv1alpha1.GPUAllocation
	// Pods lists the node's pods.
	Pods corelisters.PodLister
}

// Needed lists the MIG instances of the node's allocations that are not
// Failed and whose pod is still there and has not ended: its containers
// may still run on them.
func (l Live) Needed() ([]Needed, error) {
	var out []Needed
	for _, a := range l.Allocations() {
		if a.Spec.NodeName != l.NodeName || a.Status.Phase == gpuv1alpha1.AllocationFailed {
			continue
		}
		live, err := l.podLive(a)
		if err != nil {
			return nil, err
		}
		if !live {
			continue
		}
		for _, c := range a.Spec.Containers {
			for _, d := range c.Devices {
				if d.MIG != nil {
					out = append(out, Needed{GPU: d.UUID, MIG: *d.MIG})
				}
			}
		}
	}
	return out, nil
}

// podLive reports whether the allocation's pod is there and has not ended.
func (l Live) podLive(a *gpuv1alpha1.GPUAllocation) (bool, error) {
	pod, err := l.Pods.Pods(a.Namespace).Get(a.Name)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading pod %s/%s: %w", a.Namespace, a.Name, err)
	}
	return pod.UID == a.Spec.PodUID && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed, nil
}

// Run reconciles the instances on the GPUs that make them on demand
// every period, until ctx ends: at start, which destroys what a daemon
// that stopped left, and after pods end or allocations fail. needed lists
// the instances that live allocations (Live.Needed) or prepared claims
// hold.
func (m *Manager) Run(ctx context.Context, clk clock.WithTicker, period time.Duration, needed func() ([]Needed, error), devices func() []gpu.Device) {
	logger := klog.FromContext(ctx)
	reconcile := func() {
		var gpus []string
		for _, d := range devices() {
			if d.MIGGeometry != nil {
				gpus = append(gpus, d.UUID)
			}
		}
		if len(gpus) == 0 {
			return
		}
		held, err := needed()
		if err == nil {
			err = m.Reconcile(ctx, gpus, held)
		}
		if err != nil {
			logger.Error(err, "Reconciling MIG instances")
		}
	}
	reconcile()
	periodic.Every(ctx, clk, period, reconcile)
}

package app

import (
	"context"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/webhook/admission"
)

// podGroupRecheck is how long an answer of discovery is trusted: a
// control plane restarted with the Workload API turned on or off is
// noticed within it.
const podGroupRecheck = time.Minute

// podGroupDiscovery asks the API server's discovery whether it serves
// PodGroups, at most once per podGroupRecheck, and only when a pod names
// one.
type podGroupDiscovery struct {
	discovery discovery.DiscoveryInterface
	clock     clock.PassiveClock

	mu        sync.Mutex
	checkedAt time.Time
	served    bool
}

var _ admission.PodGroupAPI = (*podGroupDiscovery)(nil)

// PodGroupsServed reports whether scheduling.k8s.io/v1beta1 lists
// podgroups. A discovery that fails says nothing, so it reads as served:
// no warning rather than a wrong one.
func (d *podGroupDiscovery) PodGroupsServed(ctx context.Context) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.checkedAt.IsZero() && d.clock.Since(d.checkedAt) < podGroupRecheck {
		return d.served
	}
	list, err := d.discovery.ServerResourcesForGroupVersion("scheduling.k8s.io/v1beta1")
	switch {
	case apierrors.IsNotFound(err):
		d.served = false
	case err != nil:
		klog.FromContext(ctx).V(2).Info("Could not tell whether the cluster serves PodGroups", "err", err)
		return true
	default:
		d.served = slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "podgroups" })
	}
	d.checkedAt = d.clock.Now()
	return d.served
}

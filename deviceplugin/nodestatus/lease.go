package nodestatus

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// leaseDurationPeriods is the Lease's spec.leaseDurationSeconds in renewal
// periods, as the kubelet's (40 s renewed every 10 s). It tells a reader
// how long the holder means to hold the Lease; the scheduler judges a
// node stale by its own configured age.
const leaseDurationPeriods = 4

// LeaseConfig wires a LeaseRenewer.
type LeaseConfig struct {
	// NodeName names the Lease and its Node.
	NodeName string
	// Namespace holds the Lease.
	Namespace string
	// Holder is the Lease's holder identity: the plugin's pod.
	Holder string
	// Kube writes the Lease and reads the Node, which owns it when there
	// is one, so that deleting the Node deletes the Lease.
	Kube kubernetes.Interface
	// Clock stamps and paces the renewals.
	Clock clock.WithTicker
	// Period is how often the Lease is renewed.
	Period time.Duration
}

// LeaseRenewer renews the node's Lease, the plugin's heartbeat. A renewal
// is one update of a small object that only the scheduler's Lease informer
// watches; the GPUNode is not written.
type LeaseRenewer struct {
	cfg LeaseConfig
	// latest is the Lease as last written, so that a renewal needs no read.
	latest *coordinationv1.Lease
	// renewals counts the successful renewals.
	renewals atomic.Uint64
}

// Renewals returns how many times the Lease was renewed (or created).
func (r *LeaseRenewer) Renewals() uint64 { return r.renewals.Load() }

// NewLeaseRenewer returns a renewer; nothing is written until Renew or Run.
func NewLeaseRenewer(cfg LeaseConfig) *LeaseRenewer {
	return &LeaseRenewer{cfg: cfg}
}

// Run renews the Lease at once and then every period until ctx ends. A
// failed renewal is logged and retried at the next period.
func (r *LeaseRenewer) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	ticker := r.cfg.Clock.NewTicker(r.cfg.Period)
	defer ticker.Stop()
	for {
		if err := r.Renew(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "Renewing the node's Lease", "lease", klog.KRef(r.cfg.Namespace, r.cfg.NodeName))
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

// Renew sets the Lease's renew time to now, creating the Lease when there
// is none. It writes from the Lease it last wrote, and reads it again only
// when someone else changed or deleted it.
func (r *LeaseRenewer) Renew(ctx context.Context) error {
	leases := r.cfg.Kube.CoordinationV1().Leases(r.cfg.Namespace)
	if r.latest != nil {
		updated, err := leases.Update(ctx, r.renewed(r.latest), metav1.UpdateOptions{FieldManager: FieldManager})
		if err == nil {
			r.latest = updated
			r.renewals.Add(1)
			return nil
		}
		r.latest = nil
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("renewing Lease %s/%s: %w", r.cfg.Namespace, r.cfg.NodeName, err)
		}
	}
	current, err := leases.Get(ctx, r.cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: r.cfg.NodeName, Namespace: r.cfg.Namespace}}
		if ref, err := nodeOwner(ctx, r.cfg.Kube, r.cfg.NodeName); err != nil {
			return err
		} else if ref != nil {
			lease.OwnerReferences = []metav1.OwnerReference{*ref}
		}
		created, err := leases.Create(ctx, r.renewed(lease), metav1.CreateOptions{FieldManager: FieldManager})
		if err != nil {
			return fmt.Errorf("creating Lease %s/%s: %w", r.cfg.Namespace, r.cfg.NodeName, err)
		}
		klog.FromContext(ctx).Info("Created the node's Lease", "lease", klog.KObj(created))
		r.latest = created
		r.renewals.Add(1)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Lease %s/%s: %w", r.cfg.Namespace, r.cfg.NodeName, err)
	}
	updated, err := leases.Update(ctx, r.renewed(current), metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return fmt.Errorf("renewing Lease %s/%s: %w", r.cfg.Namespace, r.cfg.NodeName, err)
	}
	r.latest = updated
	r.renewals.Add(1)
	return nil
}

// renewed returns a copy of the Lease held by this plugin and renewed now.
func (r *LeaseRenewer) renewed(l *coordinationv1.Lease) *coordinationv1.Lease {
	l = l.DeepCopy()
	l.Spec.HolderIdentity = ptr.To(r.cfg.Holder)
	l.Spec.LeaseDurationSeconds = ptr.To(int32(math.Ceil((leaseDurationPeriods * r.cfg.Period).Seconds())))
	l.Spec.RenewTime = &metav1.MicroTime{Time: r.cfg.Clock.Now()}
	return l
}

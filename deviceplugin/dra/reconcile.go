package dra

import (
	"context"
	"errors"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// Reconcile brings the checkpoint and the CDI spec directory in line with
// the claims the API holds for this node, before the kubelet is served.
// A checkpointed claim that is gone, was made anew under its name, or is
// no longer allocated on this node is forgotten, and its MIG instances
// made on demand destroyed and its specs removed: the
// kubelet will not unprepare it, and left in the checkpoint it would keep
// lowering the capacity Prepare's over-commit check allows. Spec files of
// the driver's kind that no checkpointed claim names are removed too: a
// crash between writing a claim's specs and saving the checkpoint leaves
// them, and the kubelet, which was never told the claim was prepared,
// prepares it again.
//
// Only the checkpointed claims are read, each with a GET, so the cost
// follows what the node holds, not the cluster's claims. A claim that
// cannot be read is kept.
func (d *Driver) Reconcile(ctx context.Context, kube kubernetes.Interface) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	logger := klog.FromContext(ctx)
	var errs []error
	forgot := false
	for uid, p := range d.state.Claims {
		claim, err := kube.ResourceV1().ResourceClaims(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("reading prepared claim %s/%s: %w", p.Namespace, p.Name, err))
			continue
		case claim.UID == uid && d.allocatedHere(claim):
			continue
		}
		if err := errors.Join(d.destroyInstances(ctx, p), d.removeSpecs(p)); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(d.state.Claims, uid)
		forgot = true
		logger.Info("Forgot a prepared claim the API no longer holds on this node", "claim", klog.KRef(p.Namespace, p.Name), "uid", uid)
	}
	if forgot {
		if err := d.state.save(d.checkpointPath); err != nil {
			errs = append(errs, err)
		}
		d.notify()
	}
	recorded := sets.New[string]()
	for _, p := range d.state.Claims {
		for _, r := range p.Requests {
			recorded.Insert(r.SpecName)
		}
	}
	files, err := d.cdi.specFiles("")
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, name := range files {
		if recorded.Has(name) {
			continue
		}
		if err := d.cdi.remove(name); err != nil {
			errs = append(errs, err)
			continue
		}
		logger.Info("Removed a CDI spec no prepared claim names", "spec", name)
	}
	return errors.Join(errs...)
}

// allocatedHere says whether the claim's allocation holds devices of the
// driver on this node.
func (d *Driver) allocatedHere(claim *resourceapi.ResourceClaim) bool {
	if claim.Status.Allocation == nil {
		return false
	}
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver == gpuv1alpha1.DRADriverName && r.Pool == d.cfg.NodeName {
			return true
		}
	}
	return false
}

package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
)

// KueueQueueLabel is the label by which a workload names the Kueue
// LocalQueue it waits in.
const KueueQueueLabel = "kueue.x-k8s.io/queue-name"

// Kueue sees a workload only when its kind's integration is enabled and
// its namespace matches Kueue's managedJobsNamespaceSelector (since Kueue
// v0.15 also for a workload that names a queue). A workload that names a
// queue Kueue does not see is not counted against the queue's quota:
// with the integration off it runs past the queue; in a namespace Kueue
// does not manage, a pod runs past it too, while Kueue's own webhooks
// still suspend a Job or gate a Deployment's pods, and nothing ever
// admits them. Either way nothing tells its owner, so the webhook warns,
// naming the label and the setting that keeps Kueue away.

// kueueKind is a kind the webhook reviews, as a warning names it, the
// Kueue integration that manages it, and what becomes of it in a
// namespace Kueue does not manage (as Kueue v0.17 does).
type kueueKind struct {
	name, plural, integration, unmanagedNamespace string
}

var (
	kueuePod = kueueKind{"pod", "pods", "pod",
		"so Kueue does not gate it: it runs without waiting in the queue or counting against its quota"}
	kueueJob = kueueKind{"Job", "Jobs", "batch/job",
		"so Kueue suspends it for its queue but never admits it: it waits for ever"}
	kueueDeployment = kueueKind{"Deployment", "Deployments", "deployment",
		"so Kueue gates its pods for the queue but never admits them: they wait for ever"}
)

// withQueueWarning adds to resp, when it admits a workload of kind that
// names a queue Kueue will not manage, a warning saying why. spec is the
// pod or the workload's pod template: only GPU workloads are warned about.
func (a *Admitter) withQueueWarning(ctx context.Context, req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse,
	kind kueueKind, meta *metav1.ObjectMeta, spec *corev1.PodSpec) *admissionv1.AdmissionResponse {
	if !resp.Allowed {
		return resp
	}
	if w := a.unmanagedQueue(ctx, req.Namespace, kind, meta, spec); w != "" {
		resp.Warnings = append(resp.Warnings, w)
	}
	return resp
}

// unmanagedQueue returns why Kueue will not manage the queue the
// workload names, or "" when it names none, Kueue is not run, Kueue will
// manage it, or the workload asks for no GPU. A pod that a controller
// created is left to its controller's review: its owner is what names
// the queue, and what the owner's creator sees.
func (a *Admitter) unmanagedQueue(ctx context.Context, namespace string, kind kueueKind, meta *metav1.ObjectMeta, spec *corev1.PodSpec) string {
	queue, named := meta.Labels[KueueQueueLabel]
	if !named || len(a.cfg.KueueIntegrations) == 0 || !a.podAsks(spec) {
		return ""
	}
	if kind == kueuePod && metav1.GetControllerOfNoCopy(meta) != nil {
		return ""
	}
	names := fmt.Sprintf("labelled %s=%s, names a Kueue queue, but Kueue will not manage it", KueueQueueLabel, queue)
	if !slices.Contains(a.cfg.KueueIntegrations, kind.integration) {
		return fmt.Sprintf("%s %q %s: Kueue's integrations (%s) do not include %q, so Kueue does not see %s: "+
			"it neither waits in that queue nor counts against its quota",
			kind.name, meta.Name, names, strings.Join(a.cfg.KueueIntegrations, ", "), kind.integration, kind.plural)
	}
	ns, err := a.namespaces.Get(namespace)
	switch {
	case apierrors.IsNotFound(err):
		// A namespace created a moment ago may not be in the cache yet.
		return ""
	case err != nil:
		klog.FromContext(ctx).Error(err, "Reading namespace for Kueue's namespace selector", "namespace", namespace)
		return ""
	}
	if a.kueueNamespaces.Matches(labels.Set(ns.Labels)) {
		return ""
	}
	return fmt.Sprintf("%s %q %s: namespace %q does not match Kueue's managedJobsNamespaceSelector (%s), %s; label the namespace to match",
		kind.name, meta.Name, names, namespace, a.kueueNamespaces, kind.unmanagedNamespace)
}

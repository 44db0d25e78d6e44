package admission

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// In extender mode, kube-scheduler tries every waiting GPU pod in turn and
// asks the extender to filter every node for it, so on a full cluster the
// pods that fit nowhere take the scheduling cycles a freed GPU waits on.
// kube-scheduler does not try a pod that has a scheduling gate, and gates
// can be added only when the pod is created: so the webhook creates the
// GPU pods of the schedulers in Config.FitGateSchedulers with
// gpuv1alpha1.FitSchedulingGate, and the extender of that scheduler lifts
// the gate once some node could hold the pod and the pods ahead of it
// leave it room. A pod bound already (spec.nodeName) is never scheduled,
// so it is not gated; nor is a Job's pod template, since each pod the Job
// creates is gated as it passes through the webhook.

// fitGateMutations returns the patch that adds the fit gate to the
// scheduling gates of a GPU pod handed to scheduler, when scheduler is one
// of Config.FitGateSchedulers and the pod is not bound and not gated so
// already.
func (a *Admitter) fitGateMutations(pod *corev1.Pod, scheduler string) []patchOp {
	if pod.Spec.NodeName != "" || !slices.Contains(a.cfg.FitGateSchedulers, scheduler) {
		return nil
	}
	gates := pod.Spec.SchedulingGates
	if slices.ContainsFunc(gates, func(g corev1.PodSchedulingGate) bool { return g.Name == gpuv1alpha1.FitSchedulingGate }) {
		return nil
	}
	gate := corev1.PodSchedulingGate{Name: gpuv1alpha1.FitSchedulingGate}
	if len(gates) == 0 {
		return []patchOp{{Op: "add", Path: pointer("spec", "schedulingGates"), Value: []corev1.PodSchedulingGate{gate}}}
	}
	return []patchOp{{Op: "add", Path: pointer("spec", "schedulingGates", "-"), Value: gate}}
}

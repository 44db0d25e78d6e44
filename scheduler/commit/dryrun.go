package commit

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// DryRun asks the API server to write the pod's GPUAllocation and bind
// the pod as dry runs: each request is validated and admitted (admission
// webhooks that declare no side effects, ValidatingAdmissionPolicies,
// quota) exactly as the real one would be, and nothing is written; one
// that a webhook with side effects cannot see as a dry run passes. It
// takes no node's turn, since no allocation goes pending. A pod that asks
// for no GPUs (no containers) has only its binding tried; bind is as
// Commit's. An allocation
// of the same name already there passes: Commit replaces it.
func (c *Committer) DryRun(ctx context.Context, pod *corev1.Pod, node string, containers []gpuv1alpha1.ContainerAllocation, bind string) error {
	dryRun := []string{metav1.DryRunAll}
	if len(containers) > 0 {
		_, err := c.Tessera.GpuV1alpha1().GPUAllocations(pod.Namespace).Create(ctx, newAllocation(pod, node, containers, bind),
			metav1.CreateOptions{FieldManager: c.FieldManager, DryRun: dryRun})
		if err != nil && !apierrors.IsAlreadyExists(err) && !dryRunUnsupported(err) {
			return fmt.Errorf("creating GPU allocation %s/%s as a dry run: %w", pod.Namespace, pod.Name, err)
		}
	}
	err := c.Kube.CoreV1().Pods(pod.Namespace).Bind(ctx, binding(pod, node), metav1.CreateOptions{FieldManager: c.FieldManager, DryRun: dryRun})
	if err != nil && !dryRunUnsupported(err) {
		return fmt.Errorf("binding pod %s/%s to node %s as a dry run: %w", pod.Namespace, pod.Name, node, err)
	}
	return nil
}

// dryRunUnsupported reports whether a dry run was refused only because an
// admission webhook that does not declare itself free of side effects
// matched it: the API server refuses every dry run such a webhook would
// see, which says nothing of the real request.
func dryRunUnsupported(err error) bool {
	return apierrors.IsBadRequest(err) && strings.Contains(err.Error(), "does not support dry run")
}

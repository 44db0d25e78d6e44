package liveness

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	gpuac "github.com/tessera-gpu/tessera/generated/applyconfiguration/gpu/v1alpha1"
)

// mark sets the GPUNode's Ready condition to Unknown by server-side apply
// of that one condition under the Marker's own field manager. The
// conditions are a map keyed by type, so the apply leaves the plugin's
// other fields and conditions alone and takes over only the Ready
// condition's status, reason, message and transition time; the plugin,
// which applies its whole status with force, takes them back when it
// writes Ready again. The GPUNode's resource version is a precondition:
// if the plugin wrote since it was read, the apply fails with a conflict
// instead of overwriting what the plugin just said.
func (m *Marker) mark(ctx context.Context, gn *gpuv1alpha1.GPUNode, message string) error {
	ready := metav1ac.Condition().
		WithType(gpuv1alpha1.GPUNodeReady).
		WithStatus(metav1.ConditionUnknown).
		WithReason(gpuv1alpha1.GPUNodeHeartbeatStale).
		WithMessage(message).
		WithLastTransitionTime(metav1.NewTime(m.cfg.Clock.Now()))
	apply := gpuac.GPUNode(gn.Name).
		WithResourceVersion(gn.ResourceVersion).
		WithStatus(gpuac.GPUNodeStatus().WithConditions(ready))
	_, err := m.cfg.Tessera.GpuV1alpha1().GPUNodes().ApplyStatus(ctx, apply, metav1.ApplyOptions{FieldManager: m.cfg.FieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("marking GPUNode %s stale: %w", gn.Name, err)
	}
	return nil
}

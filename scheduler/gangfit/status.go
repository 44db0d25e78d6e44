package gangfit

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// setState writes the check's state on the Workload with server-side
// apply, as its field manager: only its own entry of
// status.admissionChecks changes. The write carries the resource version
// the check decided on, so a decision on a Workload that Kueue changed
// since (evicted it, reset the check) fails with a conflict, and is made
// again on what Kueue wrote.
func (c *Controller) setState(ctx context.Context, w *workload, st checkState) error {
	st.LastTransitionTime = metav1.NewTime(c.cfg.Clock.Now())
	entry, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": workloads.GroupVersion().String(),
		"kind":       "Workload",
		"metadata":   map[string]any{"name": w.Name, "namespace": w.Namespace, "resourceVersion": w.ResourceVersion},
		"status":     map[string]any{"admissionChecks": []any{entry}},
	}}
	_, err = c.cfg.Dynamic.Resource(workloads).Namespace(w.Namespace).ApplyStatus(ctx, w.Name, u,
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("setting the check %s of Workload %s/%s to %s: %w", st.Name, w.Namespace, w.Name, st.State, err)
	}
	return nil
}

// activateRetry is how long the check waits to mark an AdmissionCheck
// active again after a failed write.
const activateRetry = 5 * time.Second

// activate marks an AdmissionCheck of the gang-fit controller Active:
// Kueue keeps a ClusterQueue whose checks are not all active from
// admitting anything.
func (c *Controller) activate(obj any) {
	var ac admissionCheck
	if !c.leading.Load() {
		return
	}
	if err := fromUnstructured(obj, &ac); err != nil || ac.Spec.ControllerName != gpuv1alpha1.GangFitControllerName {
		return
	}
	if meta.IsStatusConditionTrue(ac.Status.Conditions, "Active") {
		return
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": admissionChecks.GroupVersion().String(),
		"kind":       "AdmissionCheck",
		"metadata":   map[string]any{"name": ac.Name},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type":               "Active",
			"status":             string(metav1.ConditionTrue),
			"reason":             "Active",
			"message":            "Tessera's scheduler serves the check",
			"observedGeneration": ac.Generation,
			"lastTransitionTime": c.cfg.Clock.Now().UTC().Format(time.RFC3339),
		}}},
	}}
	if _, err := c.cfg.Dynamic.Resource(admissionChecks).ApplyStatus(context.Background(), ac.Name, u,
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		klog.Background().Error(err, "Marking the AdmissionCheck active; trying again", "admissionCheck", ac.Name, "after", activateRetry)
		time.AfterFunc(activateRetry, func() { c.activate(obj) })
	}
}

package gangfit

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Kueue's resources, at the API version Kueue v0.17 serves and stores.
var (
	workloads       = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}
	admissionChecks = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "admissionchecks"}
	resourceFlavors = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "resourceflavors"}
)

// Check states and Workload conditions, as Kueue names them.
const (
	statePending  = "Pending"
	stateReady    = "Ready"
	stateRetry    = "Retry"
	stateRejected = "Rejected"

	conditionQuotaReserved = "QuotaReserved"
	conditionFinished      = "Finished"
	conditionEvicted       = "Evicted"
)

// workload is the part of a Kueue Workload the check reads. Tessera does
// not import Kueue, which builds against its own k8s.io versions; these
// fields are Kueue's v1beta2 API.
type workload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		PodSets []podSet `json:"podSets"`
	} `json:"spec"`
	Status struct {
		Conditions      []metav1.Condition `json:"conditions"`
		Admission       *admission         `json:"admission"`
		AdmissionChecks []checkState       `json:"admissionChecks"`
		RequeueState    *struct {
			RequeueAt *metav1.Time `json:"requeueAt"`
		} `json:"requeueState"`
	} `json:"status"`
}

// admission is what Kueue admitted of a Workload, by pod set.
type admission struct {
	PodSetAssignments []podSetAssignment `json:"podSetAssignments"`
}

// podSetAssignment is what Kueue admitted of a pod set: how many pods,
// and the ResourceFlavor of each resource.
type podSetAssignment struct {
	Name    string            `json:"name"`
	Count   *int32            `json:"count"`
	Flavors map[string]string `json:"flavors"`
}

// resourceFlavor is the part of a Kueue ResourceFlavor that says where
// the pods admitted in it may run: Kueue adds its node labels to their
// node selector and its tolerations to theirs when it starts them.
type resourceFlavor struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		NodeLabels  map[string]string   `json:"nodeLabels"`
		Tolerations []corev1.Toleration `json:"tolerations"`
	} `json:"spec"`
}

// podSet is a group of a Workload's pods made from one template.
type podSet struct {
	Name     string                 `json:"name"`
	Count    int32                  `json:"count"`
	Template corev1.PodTemplateSpec `json:"template"`
}

// checkState is an AdmissionCheck's state on a Workload.
type checkState struct {
	Name                string         `json:"name"`
	State               string         `json:"state"`
	LastTransitionTime  metav1.Time    `json:"lastTransitionTime"`
	Message             string         `json:"message"`
	RequeueAfterSeconds *int32         `json:"requeueAfterSeconds,omitempty"`
	PodSetUpdates       []podSetUpdate `json:"podSetUpdates,omitempty"`
}

// podSetUpdate is what a check asks Kueue to add to a pod set's pods.
type podSetUpdate struct {
	Name        string            `json:"name"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// admissionCheck is the part of a Kueue AdmissionCheck the check reads.
type admissionCheck struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ControllerName string `json:"controllerName"`
	} `json:"spec"`
	Status struct {
		Conditions []metav1.Condition `json:"conditions"`
	} `json:"status"`
}

// fromUnstructured converts an informer's object into out.
func fromUnstructured(obj any, out any) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("unexpected object %T", obj)
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out)
}

// condition reports whether the Workload's condition of type t is True.
func (w *workload) condition(t string) bool {
	for _, c := range w.Status.Conditions {
		if c.Type == t {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// count is how many pods of the pod set Kueue admitted: the assignment's
// count under partial admission, or the pod set's.
func (w *workload) count(ps *podSet) int32 {
	if a := w.assignment(ps); a != nil && a.Count != nil {
		return *a.Count
	}
	return ps.Count
}

// retryAt is when Kueue tries the Workload again after a check's Retry;
// zero when it does not wait.
func (w *workload) retryAt() time.Time {
	if w.Status.RequeueState == nil || w.Status.RequeueState.RequeueAt == nil {
		return time.Time{}
	}
	return w.Status.RequeueState.RequeueAt.Time
}

// assignment is what Kueue admitted of the pod set; nil before it has.
func (w *workload) assignment(ps *podSet) *podSetAssignment {
	if w.Status.Admission == nil {
		return nil
	}
	for i := range w.Status.Admission.PodSetAssignments {
		if a := &w.Status.Admission.PodSetAssignments[i]; a.Name == ps.Name {
			return a
		}
	}
	return nil
}

// owners are the UIDs of the Workload's owners: the Job, or the pods, that
// Kueue made it for.
func (w *workload) owners() []types.UID {
	uids := make([]types.UID, len(w.OwnerReferences))
	for i, o := range w.OwnerReferences {
		uids[i] = o.UID
	}
	return uids
}

// gangKey is the key of the room held for a pod set's pods, which they
// carry in gpuv1alpha1.GangHoldAnnotation.
func gangKey(w *workload, ps *podSet) string { return string(w.UID) + "/" + ps.Name }

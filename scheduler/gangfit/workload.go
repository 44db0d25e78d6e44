package gangfit

import (
	"fmt"

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
		Conditions []metav1.Condition `json:"conditions"`
		Admission  *struct {
			PodSetAssignments []struct {
				Name  string `json:"name"`
				Count *int32 `json:"count"`
			} `json:"podSetAssignments"`
		} `json:"admission"`
		AdmissionChecks []checkState `json:"admissionChecks"`
	} `json:"status"`
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
	if w.Status.Admission != nil {
		for _, a := range w.Status.Admission.PodSetAssignments {
			if a.Name == ps.Name && a.Count != nil {
				return *a.Count
			}
		}
	}
	return ps.Count
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

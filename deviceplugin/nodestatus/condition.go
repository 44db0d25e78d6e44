package nodestatus

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reasons of the Ready condition.
const (
	// ReasonRegistered: the plugin is registered with the kubelet and serving.
	ReasonRegistered = "Registered"
	// ReasonNotRegistered: the plugin is not (yet) registered with the kubelet.
	ReasonNotRegistered = "NotRegistered"
	// ReasonNoGPUs: discovery found no GPU; the message says why.
	ReasonNoGPUs = "NoGPUs"
	// ReasonStopped: the plugin was stopped.
	ReasonStopped = "Stopped"
)

// maxConditionMessage is the API's bound on a condition message.
const maxConditionMessage = 32768

// Readiness is the Ready condition the plugin wants published.
type Readiness struct {
	// Ready is the condition's status.
	Ready bool
	// Reason is one of the Reason constants.
	Reason string
	// Message says what a person needs to know, such as why no GPU was found.
	Message string
}

// condition returns the condition of the type, keeping the previous
// transition time when the status did not change.
func (r Readiness) condition(conditionType string, previous *metav1.Condition, now metav1.Time) metav1.Condition {
	status := metav1.ConditionFalse
	if r.Ready {
		status = metav1.ConditionTrue
	}
	c := metav1.Condition{
		Type:               conditionType,
		Status:             status,
		Reason:             r.Reason,
		Message:            truncate(r.Message, maxConditionMessage),
		LastTransitionTime: now,
	}
	if previous != nil && previous.Status == status && !previous.LastTransitionTime.IsZero() {
		c.LastTransitionTime = previous.LastTransitionTime
	}
	return c
}

// Package preemption says what evicting pods would do for a pod that does
// not fit, with the placement core, and tells the pod: the extender's
// preempt verb checks kube-scheduler's victims with it, and the plugin
// explains why no preemption helps.
package preemption

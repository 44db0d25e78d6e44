// Package podrequest reads a pod's GPU request for the scheduler's front
// ends: the containers' resources and the placement annotations, resolved
// with the configured defaults into a placement.Request and a node policy.
package podrequest

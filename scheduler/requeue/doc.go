// Package requeue makes kube-scheduler retry pods the extender turned away
// once GPUs may have become free.
//
// kube-scheduler retries an unschedulable pod when a cluster event it
// watches happens, such as the deletion of a pod in its way. It sees that
// event at the same moment as the extender's informers, so its retry can
// reach the extender before the extender has freed the GPUs, and be turned
// away again; the pod would then wait for the next event, or for
// kube-scheduler's five-minute fallback. And it does not watch GPUNodes at
// all. So when GPUs are freed, or a GPUNode appears or changes, the
// extender updates an annotation on the pods it turned away shortly
// before, which kube-scheduler takes as a reason to retry them.
//
// A pod its namespace's GPU quota turned away waits on no event
// kube-scheduler watches: the namespace freeing GPUs, or a ResourceQuota
// raised or deleted. Such pods are remembered until they are bound or
// deleted, and poked when their namespace's quota has room for them.
package requeue

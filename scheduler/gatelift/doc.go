// Package gatelift is the extender's fit gate. With it on, Tessera's
// webhook puts the scheduling gate gpu.tessera.dev/fit on each GPU pod of
// the extender's profile when it is created, and kube-scheduler does not
// try the pod while the gate is on. The lifter takes the gate off once
// some live node could hold the pod's GPUs and the pods ahead of it in
// kube-scheduler's queue order (priority, then age) leave it room, and
// when GPUs free on a node it releases the gated pods that room can
// serve, as many as it holds. So under a backlog kube-scheduler tries the
// pods that can be placed, not every pod in turn, while a freed GPU waits.
//
// It shares tessera-scheduler's rules (scheduler/waiters): a pod whose
// wait is not for GPUs to free is released at once (no GPUs asked for, an
// invalid request, of a gang, one that could preempt a lower-priority
// pod, one its namespace's GPU quota turns away, or one no node could
// hold even with its GPUs all free), and kube-scheduler then tells it why
// it waits. A held pod is told why in its PodScheduled condition and a
// FailedScheduling event.
//
// A gate cannot be put back once lifted: a released pod whose cycle
// fails waits in kube-scheduler's queue as it would without the gate, and
// the extender's requeuer pokes it when GPUs free. Only the process that
// holds the fit gate's Lease lifts gates, so that two extenders side by
// side in a rollout never release two pods for one pod's room; a new
// leader judges every gated pod anew. The leader need not be the
// extender kube-scheduler asks: it learns from the API whether each pod
// it released was bound or turned away.
package gatelift

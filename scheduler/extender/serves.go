package extender

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// serves returns whether a node, as the view holds it when asked, could
// take a pod filter turned away everywhere, by filter's rules, its
// namespace's GPU quota included: the requeuer pokes the pod only when
// GPUs freed on such a node. ft is scratch memory the caller lends.
func (e *Extender) serves(pod *corev1.Pod, req *placement.Request) func(ft *placement.Fitter, node string) bool {
	return func(ft *placement.Fitter, node string) bool {
		j := e.judge(pod, req)
		fits := false
		e.View.Read([]string{node}, "", func(_ string, n *view.Node) {
			fits = j.serves(ft, n)
		})
		return fits
	}
}

// admits returns whether the pod's namespace's GPU quota has room now for
// asked, the least the pod asked of it where it turned the pod away,
// beside taken, what the pods poked before it will take; and asked. The
// requeuer pokes a pod the quota turned away only when the quota may have
// room for it.
func (e *Extender) admits(pod *corev1.Pod, req *placement.Request, asked placement.Use) func(taken placement.Use) (placement.Use, bool) {
	return func(taken placement.Use) (placement.Use, bool) {
		q := e.rules().Quota(e.View, pod.Namespace, pod.UID, req)
		q.Used = q.Used.Add(taken)
		return asked, q.ExceededBy(asked).OK()
	}
}

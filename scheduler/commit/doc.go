// Package commit is Tessera's allocation protocol, shared by every front end
// that binds pods (the extender's bind verb and the kube-scheduler plugin's
// Bind): wait for the node's turn (one allocation in flight per node, see
// scheduler/inflight), write the pod's GPUAllocation, bind the pod, and undo
// what was written when the binding fails.
package commit

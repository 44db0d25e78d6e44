// Package liveness marks the GPUNodes of nodes whose device plugin stopped
// renewing its Lease, as the node lifecycle controller marks Nodes whose
// kubelet stopped: their Ready condition becomes Unknown, reason
// HeartbeatStale, so that `kubectl get gpunodes` agrees with the extender,
// which offers such a node no new pod. The device plugin, once it renews
// its Lease again, sets the condition back.
package liveness

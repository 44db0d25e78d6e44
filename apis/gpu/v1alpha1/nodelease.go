package v1alpha1

// A node's liveness is what the device plugin and the scheduler agree on
// beside the GPUNode. As the kubelet does (KEP-589), each node's device
// plugin renews one coordination.k8s.io/v1 Lease, named like the node, in
// one namespace; its spec.renewTime is the plugin's heartbeat. The
// scheduler ages a Lease from when it saw it renewed, by its own clock, as
// the node lifecycle controller does: renewTime, stamped by the node's
// clock, only tells one renewal from the next. The GPUNode's status is
// written only when something in it changes. The scheduler offers no new
// pods to a node whose Lease is older than its configured age, and marks
// that node's GPUNode Ready condition Unknown.

// DefaultNodeLeaseNamespace holds the Leases unless both daemons are told
// another: a namespace of their own, as kube-node-lease holds the
// kubelets', so that the device plugins, which must be let write any Lease
// there (RBAC cannot name the caller's node), can write no other Lease,
// such as the scheduler's leader-election Lease in the namespace Tessera
// runs in. The chart's nodeLeases.namespace defaults to it.
const DefaultNodeLeaseNamespace = "tessera-node-lease"

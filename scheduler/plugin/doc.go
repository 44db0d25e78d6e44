// Package plugin is Tessera as a kube-scheduler framework plugin: the same
// placement core as the extender (scheduler/placement and scheduler/view),
// run inside kube-scheduler, so that GPU slices take part in kube-scheduler's
// own preemption and queueing.
//
// PreFilter reads the pod's GPU request once into the cycle state. Filter
// fits it on a node's GPUs as the view sees them, with the pods that
// preemption's dry run removes or adds (PreFilterExtensions) taken off or
// put on, so that DefaultPreemption finds the victims that free the slice
// the pod needs. Score ranks nodes by the node policy. Reserve takes the
// GPUs in the view; Bind writes the pod's GPUAllocation and binds the pod
// through the allocation protocol the extender uses (scheduler/commit), one
// pod in flight per node. Queueing hints on GPUNodes, GPUAllocations and
// pods, and the activation of turned-away pods when the view frees GPUs,
// retry a pod as soon as GPUs for it may be free.
//
// For a PodGroup (kube-scheduler's pod group cycle, with the
// TopologyAwareWorkloadScheduling gate), GeneratePlacements proposes
// where to try the whole gang, every node and the sets of the fewest nodes
// that could hold its GPU pods together, and ScorePlacement judges each
// placement where the gang fits by what it does to the cluster: nodes
// used and fragments left (scheduler/gangplace). The members placed
// together bind only once every one's allocation and binding have passed
// as dry runs; otherwise the whole gang is rolled back (gangBarriers).
//
// The plugin keeps its own informers on GPUNodes, GPUAllocations and the
// profile's pods, which feed the view through scheduler/tracker, built by
// scheduler/viewsync as the extender's are; with metricsAddress it serves
// the view's per-GPU series (/metrics/state) on a listener of its own,
// since kube-scheduler's /metrics knows nothing of the GPUs. Two
// profiles would each keep a view and a one-pod-per-node gate and
// over-commit the GPUs, so the factory tessera-scheduler registers
// (NewFactory) refuses to build the plugin for a second profile, and the
// scheduler does not start.
package plugin

// Package nodescore turns the GPU load a pod would leave on each node into
// kube-scheduler's node scores by the pod's node policy, for both plugins
// of tessera-scheduler: Tessera (plugin mode) and TesseraDRA (DRA mode).
// Score returns a node's load with FromLoad; NormalizeScore ranks the
// loads with Normalize, through placement.Rank, as the extender's
// prioritize does.
package nodescore

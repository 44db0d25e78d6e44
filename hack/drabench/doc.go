// Package drabench measures what kube-scheduler's DynamicResources plugin
// spends per pod in Tessera's DRA mode, and how that grows with the claims
// already allocated in the cluster, with no control plane: it drives
// k8s.io/dynamic-resource-allocation's structured allocator, the code the
// plugin calls, the way the plugin calls it, over ResourceSlices built by
// the node daemon's own code and a claim written by the admission webhook's
// own code.
//
// Per pod, kube-scheduler v1.37.2 gathers the allocated state of the whole
// cluster and builds an allocator at PreFilter, then calls Allocate once
// for each node it filters. The benchmarks time those steps apart and
// together, at several counts of claims already allocated, for two ways
// of publishing GPUs: consumable capacity (what Tessera publishes) and
// partitionable devices with shared counters (fixed fractions of a GPU).
//
//	go test ./hack/drabench -run '^$' -bench . -benchtime 20x -count 3
//
// docs/benchmark.md ("The DRA allocator as claims pile up") has the
// results and what they mean.
package drabench

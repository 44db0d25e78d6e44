// Package view is the extender's in-memory picture of every GPU: one
// placement.Node per GPUNode, with the holds of the pods placed on it applied
// incrementally. Informer handlers and binds change it; filter, prioritize
// and the metrics collector read it under a shared lock, so a read costs
// O(nodes asked about × GPUs) and never recounts pods.
//
// Rules are what keep a node from taking a GPU pod whatever its GPUs'
// usage (a stale heartbeat, HAMi-core missing under HAMiCoreRefuse), and
// the namespace's GPU quota on what the pod would get there, in the one
// order the extender's filter, bind and preempt verbs and the plugin's
// Filter, Reserve and requeuer all follow. The view counts what each
// namespace's pods hold of its quota as pods come and go, and
// ReserveWithin checks the quota and reserves in one step.
package view

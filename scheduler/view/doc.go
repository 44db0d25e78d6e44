// Package view is the extender's in-memory picture of every GPU: one
// placement.Node per GPUNode, with the holds of the pods placed on it applied
// incrementally. Informer handlers and binds change it; filter, prioritize
// and the metrics collector read it under a shared lock, so a read costs
// O(nodes asked about × GPUs) and never recounts pods.
package view

// Package plugin assembles Tessera's device plugin for one node: GPU
// discovery, the GPUNode publisher, the kubelet device-plugin server, the
// allocator, the health watch and the metrics endpoint. It is a type with
// Run(ctx), so that the daemon, the local cluster (several simulated nodes
// in one process) and tests all run the same thing.
package plugin

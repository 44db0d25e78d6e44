// Package metrics exports what NVML measures on the node (per GPU memory
// used and total, utilisation, and the memory each pod uses on each GPU)
// and how the plugin's Allocate calls went, from the plugin's own
// Prometheus registry. GPU state is read when Prometheus scrapes, so a GPU
// or pod that is gone leaves no stale series.
package metrics

// Package fault is Tessera's fault suite. On a real control plane it runs,
// once per scheduler mode, what places pods (kube-scheduler on the shipped
// configuration and the scheduler extender; or tessera-scheduler on its
// shipped configuration) and simulated GPU nodes each served by Tessera's
// device plugin and a node agent playing the kubelet. Under a steady load
// of GPU pods, more than fit, with the oldest running pod deleted every
// second, it kills the extender or tessera-scheduler repeatedly, restarts
// kube-apiserver, restarts a device plugin, and restarts a node's kubelet
// stand-in the way the kubelet restarts (its device-plugin directory
// cleared, kubelet.sock created again). After each fault it checks, from
// API state alone, that no GPU holds more memory, cores or shares than it
// has, that no allocation is orphaned, that every bound GPU pod has exactly
// its own allocation on its node and was served from it, and it measures
// how long any pod stayed Pending while bound or while a GPU could hold it.
// docs/faults.md records those waits.
package fault

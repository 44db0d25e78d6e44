// Package deviceplugin tests Tessera's device plugin end to end: a real
// etcd, kube-apiserver, kube-controller-manager and kube-scheduler, the
// scheduler extender, device plugins on simulated GPU nodes, and node
// agents playing the kubelet, which call the plugins' GetPreferredAllocation
// and Allocate for every pod bound to their node.
package deviceplugin

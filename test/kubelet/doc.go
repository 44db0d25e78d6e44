// Package kubelet tests Tessera's device plugin against the kubelet's own
// device manager, run in process: registration, the virtual devices the
// kubelet sees, Allocate and the container options the kubelet derives from
// it, and re-registration after a kubelet restart. The GPUAllocations live
// in a real kube-apiserver started by test/framework.
//
// The device manager serves kubelet.sock at the kubelet's fixed path
// /var/lib/kubelet/device-plugins, so these tests run as root and must not
// run beside a real kubelet.
package kubelet

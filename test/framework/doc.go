// Package framework runs a real Kubernetes control plane for Tessera's
// integration and end-to-end tests: etcd, kube-apiserver and, on request,
// kube-controller-manager and kube-scheduler, built at the pinned versions
// by hack/build-controlplane.sh and started on loopback with generated
// certificates. Every process is stopped when the test ends.
package framework

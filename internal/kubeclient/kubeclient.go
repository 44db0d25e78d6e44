// Package kubeclient builds the clientset for Kubernetes' own API that
// Tessera's daemons share.
package kubeclient

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// New returns a clientset for Kubernetes' built-in API that speaks
// protobuf, as the kubelet and kube-scheduler do. Pods are what Tessera
// watches most: the API server encodes each pod change once per format for
// all its watchers, and protobuf costs both sides less than JSON. Tessera's
// own resources are custom resources, which only speak JSON; their clientset
// keeps config as it is.
func New(config *rest.Config) (*kubernetes.Clientset, error) {
	config = rest.CopyConfig(config)
	config.ContentType = runtime.ContentTypeProtobuf
	config.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return kubernetes.NewForConfig(config)
}

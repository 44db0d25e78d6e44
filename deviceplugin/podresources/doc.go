// Package podresources asks the kubelet's pod-resources API which pods it
// holds on the node. While the kubelet admits a pod, that pod is listed
// and no pod it has yet to admit is: so the pod whose GPUAllocation is in
// flight and which the kubelet lists is the one an Allocate call serves,
// however many GPU pods are bound to the node at once.
package podresources

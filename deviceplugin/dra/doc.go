// Package dra is the node daemon's DRA front end: it serves the kubelet
// through the DRA kubelet-plugin API as driver gpu.tessera.dev, from the
// same inventory, health and HAMi-core limits as the device plugin. It
// publishes the node's GPUs as ResourceSlices, one shareable device per
// GPU whose memory, cores and shares kube-scheduler hands out as
// consumable capacity, and prepares each allocated request as a CDI device
// that gives the container its GPUs and HAMi-core limits.
package dra

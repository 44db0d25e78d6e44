// Package gpu is the device plugin's view of a node's physical GPUs and the
// small interfaces through which it finds them, follows their health and
// measures their use. NVML (package nvmlgpu) and a simulated-GPU file
// (package simulated) implement them.
package gpu

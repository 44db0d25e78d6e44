// Package nvmlgpu is the GPU backend that asks the NVIDIA driver through
// NVML. The library is loaded at run time (nvml.Init), so the plugin starts
// on a node without the driver and says why it found no GPU.
package nvmlgpu

package gpu

// Usage is what one GPU is doing at the moment it is measured.
type Usage struct {
	// UUID identifies the GPU.
	UUID string
	// MemoryUsedBytes and MemoryTotalBytes are the GPU's physical memory.
	MemoryUsedBytes uint64
	// MemoryTotalBytes is the GPU's physical memory.
	MemoryTotalBytes uint64
	// Utilization is the fraction of the last sample period in which a
	// kernel ran, between 0 and 1; negative when unknown.
	Utilization float64
	// Processes are the processes holding memory on the GPU.
	Processes []Process
}

// Process is one process using a GPU.
type Process struct {
	// PID is the process ID in the plugin's PID namespace (the host's, when
	// the plugin runs with hostPID).
	PID uint32
	// MemoryUsedBytes is the GPU memory the process holds.
	MemoryUsedBytes uint64
}

package gpu

import "context"

// Inventory is what discovery found on the node.
type Inventory struct {
	// DriverVersion is the GPU driver's version, or "simulated".
	DriverVersion string
	// Devices are the GPUs, ordered by index.
	Devices []Device
}

// Discoverer finds the node's GPUs.
type Discoverer interface {
	// Discover returns the GPUs. An error says why none could be found,
	// such as a node without the NVIDIA driver.
	Discover(ctx context.Context) (Inventory, error)
}

// HealthWatcher follows the health of the GPUs Discover returned.
type HealthWatcher interface {
	// WatchHealth calls report each time a GPU's health changes, until ctx
	// is done. It returns early only when health cannot be watched at all.
	WatchHealth(ctx context.Context, report func(HealthEvent)) error
}

// UsageReader measures the GPUs at the time it is called.
type UsageReader interface {
	// Usage returns one entry per GPU that could be measured.
	Usage(ctx context.Context) ([]Usage, error)
}

// Backend is everything the plugin needs from a GPU source.
type Backend interface {
	Discoverer
	HealthWatcher
	UsageReader
	// Close releases the backend, such as shutting NVML down.
	Close() error
}

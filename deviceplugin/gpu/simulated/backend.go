package simulated

import (
	"context"
	"slices"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/internal/periodic"
)

// Backend serves the GPUs of a simulated-GPU file.
type Backend struct {
	path         string
	reloadPeriod time.Duration
	clock        clock.WithTicker
	// dynamicMIG serves GPUs with a MIG geometry whole; otherwise they
	// are in MIG mode with no instances, and serve nothing.
	dynamicMIG bool

	mu   sync.Mutex
	file File
	// migMu serialises the changes to the instances file.
	migMu sync.Mutex
}

var _ gpu.Backend = (*Backend)(nil)

// New returns a backend for the file at path, read again every reloadPeriod
// while health is watched; with dynamicMIG, GPUs with a MIG geometry are
// served whole, for instances made on demand.
func New(path string, reloadPeriod time.Duration, clk clock.WithTicker, dynamicMIG bool) *Backend {
	return &Backend{path: path, reloadPeriod: reloadPeriod, clock: clk, dynamicMIG: dynamicMIG}
}

// Discover reads the file.
func (b *Backend) Discover(ctx context.Context) (gpu.Inventory, error) {
	f, err := ReadFile(b.path)
	if err != nil {
		return gpu.Inventory{}, err
	}
	b.mu.Lock()
	b.file = f
	b.mu.Unlock()
	devices := f.Devices()
	if !b.dynamicMIG {
		devices = slices.DeleteFunc(devices, func(d gpu.Device) bool { return d.MIGGeometry != nil })
	}
	slices.SortFunc(devices, func(a, b gpu.Device) int { return a.Index - b.Index })
	return gpu.Inventory{DriverVersion: DriverVersion, Devices: devices}, nil
}

// WatchHealth reads the file every reload period and reports each GPU
// whose health changed. A file that has become unreadable or invalid is
// logged and the last good content kept. It compares with what it read
// itself, not with what Discover last read: the plugin calls Discover again
// to find a changed layout, and an edit that changes health and layout at
// once must still be reported.
func (b *Backend) WatchHealth(ctx context.Context, report func(gpu.HealthEvent)) error {
	logger := klog.FromContext(ctx)
	b.mu.Lock()
	seen := b.file
	b.mu.Unlock()
	periodic.Every(ctx, b.clock, b.reloadPeriod, func() {
		f, err := ReadFile(b.path)
		if err != nil {
			logger.Error(err, "Keeping the last simulated GPU health")
			return
		}
		b.mu.Lock()
		b.file = f
		b.mu.Unlock()
		for _, ev := range healthChanges(seen.Devices(), f.Devices()) {
			report(ev)
		}
		seen = f
	})
	return nil
}

// Usage reports the memory and utilisation the file states.
func (b *Backend) Usage(ctx context.Context) ([]gpu.Usage, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	usage := make([]gpu.Usage, 0, len(b.file.GPUs))
	for _, g := range b.file.GPUs {
		usage = append(usage, gpu.Usage{
			UUID:             g.UUID,
			MemoryUsedBytes:  uint64(g.MemoryUsedMiB) << 20,
			MemoryTotalBytes: uint64(g.MemoryMiB) << 20,
			Utilization:      float64(g.UtilizationPercent) / 100,
		})
	}
	return usage, nil
}

// Close does nothing: the file is not held open.
func (b *Backend) Close() error { return nil }

func healthChanges(old, cur []gpu.Device) []gpu.HealthEvent {
	before := map[string]gpu.Health{}
	for _, d := range old {
		before[d.UUID] = d.Health
	}
	var events []gpu.HealthEvent
	for _, d := range cur {
		if h, ok := before[d.UUID]; ok && h != d.Health {
			events = append(events, gpu.HealthEvent{UUID: d.UUID, Health: d.Health})
		}
	}
	return events
}

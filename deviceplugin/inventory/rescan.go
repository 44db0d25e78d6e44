package inventory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/internal/periodic"
)

// Rescanner lists the node's GPUs again every period, so that a MIG
// layout the administrator changes while the plugin runs is served: the
// inventory's watchers (ListAndWatch, the ResourceSlice, the health
// reports) see the new devices at once.
type Rescanner struct {
	// Discoverer lists the GPUs: the backend the plugin started with.
	Discoverer gpu.Discoverer
	// Inventory takes a changed layout.
	Inventory *Inventory
	// Clock paces the rescans.
	Clock clock.WithTicker
	// Period is the time between two rescans.
	Period time.Duration
	// Prepare, if set, is given a changed layout before the inventory
	// takes it: the CDI spec must name a new device before the kubelet
	// can hand it out. An error leaves the inventory as it was until the
	// next rescan.
	Prepare func(ctx context.Context, found gpu.Inventory) error
	// OnChange, if set, is called after the inventory took a changed
	// layout.
	OnChange func()
}

// Run rescans every period until ctx ends. A failed rescan is logged and
// the devices kept as they were.
func (r *Rescanner) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	periodic.Every(ctx, r.Clock, r.Period, func() {
		if _, err := r.Rescan(ctx); err != nil {
			logger.Error(err, "Keeping the GPUs as they were")
		}
	})
}

// Rescan lists the GPUs once and applies a changed layout. It reports
// whether the layout changed.
func (r *Rescanner) Rescan(ctx context.Context) (bool, error) {
	logger := klog.FromContext(ctx)
	found, err := r.Discoverer.Discover(ctx)
	if err != nil {
		return false, fmt.Errorf("listing the node's GPUs again: %w", err)
	}
	old := r.Inventory.Devices()
	change := diffLayout(old, found.Devices)
	if change.empty() {
		return false, nil
	}
	if r.Prepare != nil {
		if err := r.Prepare(ctx, found); err != nil {
			return false, fmt.Errorf("preparing the new GPU layout: %w", err)
		}
	}
	if !r.Inventory.SetDevices(found.Devices) {
		return false, nil
	}
	slices.Sort(change.added)
	slices.Sort(change.removed)
	slices.Sort(change.changed)
	logger.Info("GPU layout changed", "added", change.added, "removed", change.removed, "changed", change.changed, "devices", len(found.Devices))
	LogMIGProblems(logger, slices.DeleteFunc(found.Devices, func(d gpu.Device) bool {
		return !slices.Contains(change.added, d.UUID) && !slices.Contains(change.changed, d.UUID)
	}))
	if r.OnChange != nil {
		r.OnChange()
	}
	return true, nil
}

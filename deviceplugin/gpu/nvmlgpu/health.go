package nvmlgpu

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

// watchedEvents are the events that mean a GPU is failing. Single-bit ECC
// errors are corrected by the hardware and are not watched.
const watchedEvents = uint64(nvml.EventTypeXidCriticalError | nvml.EventTypeDoubleBitEccError)

// waitTimeout bounds one wait for an event, and so how late the watch sees
// ctx end and runs its probes.
const waitTimeout = time.Second

// WatchHealth registers every GPU for XID and double-bit ECC events and
// reports each GPU that fails or recovers. A critical XID (not one of the
// ignored application XIDs) or an ECC error marks the GPU unhealthy; a GPU
// NVML reports lost is unhealthy too. An unhealthy GPU is healthy again once
// it has gone RecoveryPeriod without a critical event and answers NVML.
func (b *Backend) WatchHealth(ctx context.Context, report func(gpu.HealthEvent)) error {
	logger := klog.FromContext(ctx)
	set, ret := b.lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("creating an NVML event set: %v", ret)
	}
	defer set.Free()
	for _, d := range b.snapshot() {
		if err := register(d, set); err != nil {
			logger.Error(err, "Marking GPU unhealthy", "uuid", d.uuid)
			b.markUnhealthy(d, err.Error(), report)
		}
	}
	lastProbe := b.opts.Clock.Now()
	for ctx.Err() == nil {
		event, ret := set.Wait(uint32(waitTimeout.Milliseconds()))
		switch ret {
		case nvml.SUCCESS:
			b.handle(ctx, event, report)
		case nvml.ERROR_TIMEOUT:
		default:
			logger.Error(fmt.Errorf("%v", ret), "Waiting for GPU events")
			select {
			case <-ctx.Done():
			case <-time.After(waitTimeout):
			}
		}
		if b.opts.Clock.Since(lastProbe) >= b.opts.ProbePeriod {
			b.probe(ctx, report)
			lastProbe = b.opts.Clock.Now()
		}
	}
	return nil
}

// register subscribes the GPU to the watched events it supports. A GPU
// that supports none is watched only by probes.
func register(d *device, set nvml.EventSet) error {
	supported, ret := d.handle.GetSupportedEventTypes()
	if ret == nvml.ERROR_NOT_SUPPORTED {
		return nil
	}
	if ret != nvml.SUCCESS {
		return fmt.Errorf("reading supported health events: %v", ret)
	}
	mask := watchedEvents & supported
	if mask == 0 {
		return nil
	}
	if ret := d.handle.RegisterEvents(mask, set); ret != nvml.SUCCESS && ret != nvml.ERROR_NOT_SUPPORTED {
		return fmt.Errorf("registering for health events: %v", ret)
	}
	return nil
}

// handle applies one event.
func (b *Backend) handle(ctx context.Context, e nvml.EventData, report func(gpu.HealthEvent)) {
	logger := klog.FromContext(ctx)
	var msg string
	switch {
	case e.EventType&nvml.EventTypeXidCriticalError != 0:
		if slices.Contains(b.opts.IgnoredXIDs, e.EventData) {
			logger.V(2).Info("Ignoring application XID", "xid", e.EventData)
			return
		}
		msg = fmt.Sprintf("XID %d critical error", e.EventData)
	case e.EventType&nvml.EventTypeDoubleBitEccError != 0:
		msg = "double-bit ECC error"
	default:
		return
	}
	targets := b.snapshot()
	if e.Device != nil {
		if uuid, ret := e.Device.GetUUID(); ret == nvml.SUCCESS {
			targets = slices.DeleteFunc(targets, func(d *device) bool { return d.uuid != uuid })
		}
	}
	// An event NVML cannot tie to a GPU we know marks every GPU, as the
	// failure may be any of them.
	for _, d := range targets {
		logger.Info("GPU failed", "uuid", d.uuid, "reason", msg)
		b.markUnhealthy(d, msg, report)
	}
}

// probe marks lost GPUs unhealthy and recovered ones healthy.
func (b *Backend) probe(ctx context.Context, report func(gpu.HealthEvent)) {
	logger := klog.FromContext(ctx)
	now := b.opts.Clock.Now()
	for _, d := range b.snapshot() {
		_, ret := d.handle.GetMemoryInfo()
		b.mu.Lock()
		healthy, last := d.healthy, d.lastCritical
		b.mu.Unlock()
		switch {
		case ret == nvml.ERROR_GPU_IS_LOST:
			if healthy {
				logger.Info("GPU lost", "uuid", d.uuid)
			}
			b.markUnhealthy(d, "GPU is lost: it no longer answers on the PCI bus", report)
		case !healthy && ret == nvml.SUCCESS && now.Sub(last) >= b.opts.RecoveryPeriod:
			logger.Info("GPU recovered", "uuid", d.uuid, "quietFor", now.Sub(last))
			b.mu.Lock()
			d.healthy, d.reason = true, ""
			b.mu.Unlock()
			report(gpu.HealthEvent{UUID: d.uuid, Health: gpu.Healthy()})
		}
	}
}

// markUnhealthy records a critical event and reports the GPU unhealthy
// when its health or the reason changed, so that the latest reason shows.
func (b *Backend) markUnhealthy(d *device, msg string, report func(gpu.HealthEvent)) {
	b.mu.Lock()
	changed := d.healthy || d.reason != msg
	d.healthy = false
	d.reason = msg
	d.lastCritical = b.opts.Clock.Now()
	b.mu.Unlock()
	if changed {
		report(gpu.HealthEvent{UUID: d.uuid, Health: gpu.Unhealthy(msg)})
	}
}

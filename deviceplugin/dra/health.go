package dra

import (
	"context"
	"time"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// Health reports: the kubelet takes a device's health as unknown when no
// report refreshed it within the timeout, so the driver repeats its
// report well within it, and at once when a GPU's health changes.
const (
	healthTimeout = 30 * time.Second
	healthRefresh = 10 * time.Second
)

// WatchHealthStatus reports the health of every GPU to the kubelet, which
// shows it in the status of the containers that use the GPU: once at the
// start, at every change of the node's GPUs, and every healthRefresh in
// between.
func (d *Driver) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	ticker := d.cfg.Clock.NewTicker(healthRefresh)
	defer ticker.Stop()
	for {
		changed := d.cfg.Devices.Changed()
		select {
		case <-ctx.Done():
			return nil
		case reports <- d.healthReport():
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-ticker.C():
		}
	}
}

// healthReport is the health of every GPU the node has, offered or not: a
// withdrawn GPU may still be in use by a claim allocated before.
func (d *Driver) healthReport() kubeletplugin.DeviceHealthReport {
	now := d.cfg.Clock.Now()
	var report kubeletplugin.DeviceHealthReport
	for _, g := range d.cfg.Devices.Devices() {
		h := kubeletplugin.DeviceHealth{
			PoolName: d.cfg.NodeName, DeviceName: DeviceName(d.cfg.Scaling.Device(g)),
			Health: kubeletplugin.HealthStatusHealthy, LastUpdated: now, HealthCheckTimeout: healthTimeout,
		}
		if !g.Health.Healthy {
			h.Health, h.Message = kubeletplugin.HealthStatusUnhealthy, g.Health.Message
		}
		report.Devices = append(report.Devices, h)
	}
	return report
}

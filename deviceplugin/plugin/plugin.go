package plugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/allocator"
	"github.com/tessera-gpu/tessera/deviceplugin/cdispec"
	"github.com/tessera-gpu/tessera/deviceplugin/config"
	"github.com/tessera-gpu/tessera/deviceplugin/dpserver"
	"github.com/tessera-gpu/tessera/deviceplugin/dra"
	"github.com/tessera-gpu/tessera/deviceplugin/driver"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/health"
	"github.com/tessera-gpu/tessera/deviceplugin/inventory"
	"github.com/tessera-gpu/tessera/deviceplugin/metrics"
	"github.com/tessera-gpu/tessera/deviceplugin/nodestatus"
	"github.com/tessera-gpu/tessera/deviceplugin/podproc"
	"github.com/tessera-gpu/tessera/deviceplugin/podresources"
	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
	"github.com/tessera-gpu/tessera/internal/atomicfile"
	"github.com/tessera-gpu/tessera/internal/httpserver"
)

// stopTimeout bounds the last status write when the plugin stops.
const stopTimeout = 5 * time.Second

// Dependencies are what the plugin talks to.
type Dependencies struct {
	// Kube reads pods and Nodes.
	Kube kubernetes.Interface
	// Tessera reads and writes GPUNodes and GPUAllocations.
	Tessera versioned.Interface
	// Backend is the GPU source; nil: NewBackend of the configuration.
	Backend gpu.Backend
	// Clock defaults to the real clock.
	Clock clock.WithTicker
}

// Plugin is the device plugin of one node.
type Plugin struct {
	cfg  config.Configuration
	deps Dependencies

	allocateMetrics *metrics.AllocateMetrics
	metricsAddr     chan string
	health          *health.Checks
	// holder names this plugin as the holder of the node's Lease.
	holder string
}

// New checks the configuration and returns a plugin; nothing runs until Run.
func New(cfg config.Configuration, deps Dependencies) (*Plugin, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid device plugin configuration: %w", err)
	}
	if deps.Kube == nil || deps.Tessera == nil {
		return nil, errors.New("the device plugin needs Kubernetes and Tessera clients")
	}
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	if deps.Backend == nil {
		deps.Backend = NewBackend(&cfg, deps.Clock)
	}
	// In a pod, the host name is the pod's name.
	holder, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("naming the holder of the node's Lease: %w", err)
	}
	return &Plugin{cfg: cfg, deps: deps, allocateMetrics: metrics.NewAllocateMetrics(), metricsAddr: make(chan string, 1), health: health.New(), holder: holder}, nil
}

// MetricsAddress returns the address /metrics is served on, once it is
// listening (useful with port 0).
func (p *Plugin) MetricsAddress(ctx context.Context) (string, error) {
	select {
	case addr := <-p.metricsAddr:
		p.metricsAddr <- addr
		return addr, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Run serves the node until ctx ends. It returns an error only for what
// it cannot run without (caches that never sync, an unwritable preload
// file, a metrics port in use); a node without GPUs runs and says why in
// its GPUNode.
func (p *Plugin) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("node", p.cfg.NodeName)
	ctx = klog.NewContext(ctx, logger)
	defer p.closeBackend(ctx)

	caches, err := p.newCaches()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer caches.shutdown()
	defer cancel() // first: the caches stop with ctx
	if err := caches.start(ctx); err != nil {
		return err
	}
	found, discoverErr := p.discover(ctx)
	inv := inventory.New(found)
	driver, err := p.newDriver(ctx, inv)
	if err != nil {
		return err
	}
	lease, publisher := p.newNodeStatus(inv, caches, driver)
	// A changed spec changes what the plugin publishes; a changed status
	// may be another writer's, such as the scheduler marking the node stale.
	if err := caches.onGPUNodeChange(publisher.Trigger); err != nil {
		return err
	}
	reg, err := p.newRegistry(logger, inv, caches, driver)
	if err != nil {
		return err
	}

	g, ctx := errgroup.WithContext(ctx)
	p.runNodeStatus(ctx, g, lease, publisher, driver)
	if p.cfg.MetricsAddress != "" {
		g.Go(func() error { return p.serveMetrics(ctx, reg) })
	}
	if discoverErr != nil {
		logger.Error(discoverErr, "No GPUs found; the node offers none")
		publisher.SetReadiness(nodestatus.Readiness{Reason: nodestatus.ReasonNoGPUs, Message: discoverErr.Error()})
	} else if err := p.serveGPUs(ctx, g, found, inv, caches, publisher, driver); err != nil {
		return err
	}

	err = g.Wait()
	p.markStopped(ctx, publisher)
	return err
}

// closeBackend releases the GPU backend once the plugin stops.
func (p *Plugin) closeBackend(ctx context.Context) {
	if err := p.deps.Backend.Close(); err != nil {
		klog.FromContext(ctx).Error(err, "Closing the GPU backend")
	}
}

// discover lists the node's GPUs and records in the health checks what
// it found.
func (p *Plugin) discover(ctx context.Context) (gpu.Inventory, error) {
	found, err := p.deps.Backend.Discover(ctx)
	// A restart starts NVML afresh, so a failed discovery fails liveness;
	// a driver that lists no GPU fails only readiness, as a restart would
	// list none again.
	p.health.Set(health.Discovery, true, err)
	if err == nil {
		p.checkGPUs(len(found.Devices))
	}
	return found, err
}

// newDriver, in DRA mode, returns the driver that prepares the node's
// claims, reading what an earlier run prepared; in device-plugin mode it
// returns nil.
func (p *Plugin) newDriver(ctx context.Context, inv *inventory.Inventory) (*dra.Driver, error) {
	if p.cfg.Mode != config.ModeDRA {
		return nil, nil
	}
	return dra.NewDriver(dra.DriverConfig{
		NodeName:      p.cfg.NodeName,
		Devices:       inv,
		Scaling:       p.scaling(),
		Library:       p.cfg.Library(),
		CDIDir:        p.cfg.CDISpecDir,
		GPUCDIDevices: p.cfg.DeviceListStrategy == config.StrategyCDI,
		StateDir:      p.cfg.DRAPluginDir,
		MIG:           p.draMIG(ctx),
	})
}

// newNodeStatus returns the renewer of the node's Lease, its heartbeat,
// and the publisher of its GPUNode's status.
func (p *Plugin) newNodeStatus(inv *inventory.Inventory, caches *caches, driver *dra.Driver) (*nodestatus.LeaseRenewer, *nodestatus.Publisher) {
	lease := nodestatus.NewLeaseRenewer(nodestatus.LeaseConfig{
		NodeName:  p.cfg.NodeName,
		Namespace: p.cfg.LeaseNamespace,
		Holder:    p.holder,
		Kube:      p.deps.Kube,
		Clock:     p.deps.Clock,
		Period:    p.cfg.HeartbeatPeriod.Duration,
	})
	publisher := nodestatus.New(nodestatus.Config{
		NodeName:           p.cfg.NodeName,
		Tessera:            p.deps.Tessera,
		GPUNodes:           caches.gpuNodes,
		Kube:               p.deps.Kube,
		Clock:              p.deps.Clock,
		Scaling:            p.scaling(),
		Period:             p.cfg.HeartbeatPeriod.Duration,
		Source:             inv,
		Cordoned:           caches.cordoned(p.cfg.NodeName),
		HAMiCore:           func() nodestatus.Readiness { return nodestatus.CheckHAMiCore(p.cfg.LibraryPath) },
		Renewals:           lease.Renewals,
		KubeletAPI:         p.kubeletAPI(),
		AllocatedMemoryMiB: allocatedMemory(driver),
	})
	return lease, publisher
}

// newRegistry registers what NVML measures on the node, the Allocate
// calls and, in DRA mode, what the prepared claims hold of each GPU.
func (p *Plugin) newRegistry(logger klog.Logger, inv *inventory.Inventory, caches *caches, driver *dra.Driver) (*prometheus.Registry, error) {
	collector := metrics.NewCollector(logger, p.cfg.NodeName, inv.Devices, p.deps.Backend, podproc.Resolver{ProcRoot: p.cfg.ProcRoot}, caches)
	collectors := append(p.allocateMetrics.Collectors(), collector)
	if driver != nil {
		collectors = append(collectors, metrics.NewStateCollector(p.cfg.NodeName,
			func() []gpuv1alpha1.GPUDevice { return p.scaling().Devices(inv.Devices()) }, caches.cordoned(p.cfg.NodeName), driver.ByUUID))
	}
	reg, err := metrics.NewRegistry(collectors...)
	if err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	return reg, nil
}

// runNodeStatus runs the GPUNode's publisher, which in DRA mode also
// publishes when the prepared claims change, and the Lease's renewer in g.
func (p *Plugin) runNodeStatus(ctx context.Context, g *errgroup.Group, lease *nodestatus.LeaseRenewer, publisher *nodestatus.Publisher, driver *dra.Driver) {
	g.Go(func() error { publisher.Run(ctx); return nil })
	if driver != nil {
		g.Go(func() error { p.publishClaimChanges(ctx, driver, publisher); return nil })
	}
	g.Go(func() error { lease.Run(ctx); return nil })
}

// serveGPUs follows the GPUs' health and layout, and serves the kubelet
// once the node has a GPU: a GPU in MIG mode has no device until the
// administrator makes an instance.
func (p *Plugin) serveGPUs(ctx context.Context, g *errgroup.Group, found gpu.Inventory, inv *inventory.Inventory, caches *caches, publisher *nodestatus.Publisher, driver *dra.Driver) error {
	logger := klog.FromContext(ctx)
	if len(found.Devices) == 0 {
		logger.Info("No GPUs found; the node offers none until a rescan finds one", "rescanPeriod", p.cfg.RescanPeriod.Duration)
		publisher.SetReadiness(nodestatus.Readiness{Reason: nodestatus.ReasonNoGPUs, Message: noGPUs.Error()})
	} else {
		logger.Info("Found GPUs", "count", len(found.Devices), "driverVersion", found.DriverVersion)
	}
	inventory.LogMIGProblems(logger, found.Devices)
	if err := p.writePreloadFile(); err != nil {
		return err
	}
	if err := p.writeCDISpec(ctx, found); err != nil {
		return err
	}
	p.watchHealth(ctx, g, inv, publisher)
	rescanner := &inventory.Rescanner{
		Discoverer: p.deps.Backend,
		Inventory:  inv,
		Clock:      p.deps.Clock,
		Period:     p.cfg.RescanPeriod.Duration,
		Prepare:    p.writeCDISpec,
		OnChange: func() {
			p.checkGPUs(len(inv.Devices()))
			publisher.Trigger()
		},
	}
	g.Go(func() error { rescanner.Run(ctx); return nil })
	g.Go(func() error {
		if !inv.WaitForDevices(ctx) {
			return nil
		}
		if driver != nil {
			return p.serveDRA(ctx, g, inv, caches, publisher, driver)
		}
		p.serveKubelet(ctx, g, inv, caches, publisher)
		return nil
	})
	return nil
}

// noGPUs is why a node whose driver lists no GPU is not ready.
var noGPUs = errors.New("the GPU driver reports no GPU on this node")

// checkGPUs fails readiness while the node has no GPU; a restart would
// find none either, so liveness holds.
func (p *Plugin) checkGPUs(devices int) {
	if devices == 0 {
		p.health.Set(health.GPUs, false, noGPUs)
		return
	}
	p.health.Set(health.GPUs, false, nil)
}

// writeCDISpec writes the spec naming each GPU, with the cdi device-list
// strategy. CDI allows no spec without a device: with none, the spec
// stays as it was, naming devices no one is offered.
func (p *Plugin) writeCDISpec(ctx context.Context, found gpu.Inventory) error {
	if p.cfg.DeviceListStrategy != config.StrategyCDI || len(found.Devices) == 0 {
		return nil
	}
	w := cdispec.Writer{Dir: p.cfg.CDISpecDir}
	if p.cfg.DriverRoot != "" {
		w.DriverRoot = driver.Root{Path: p.cfg.DriverRoot, HostPath: p.cfg.HostDriverRoot}
	}
	return w.Write(ctx, found)
}

// serveKubelet starts the device-plugin server.
func (p *Plugin) serveKubelet(ctx context.Context, g *errgroup.Group, inv *inventory.Inventory, caches *caches, publisher *nodestatus.Publisher) {
	alloc := allocator.New(allocator.Config{
		NodeName:      p.cfg.NodeName,
		ResourceName:  corev1.ResourceName(p.cfg.ResourceName),
		Tessera:       p.deps.Tessera,
		Kube:          p.deps.Kube,
		Allocations:   caches.allocations,
		Pods:          caches.pods,
		Devices:       inv,
		Clock:         p.deps.Clock,
		LookupTimeout: p.cfg.AllocationLookupTimeout.Duration,
		Response: allocator.ResponseConfig{
			DeviceListStrategy:   p.cfg.DeviceListStrategy,
			Library:              p.cfg.Library(),
			MemoryOversubscribed: p.cfg.MemoryScaling > 1,
		},
		Kubelet: p.kubeletPods(ctx),
		MIG:     p.migPreparer(ctx, g, inv, caches),
	})
	p.health.Set(health.Registration, true, errors.New("not registered with the kubelet yet"))
	server := dpserver.New(dpserver.Config{
		ResourceName: p.cfg.ResourceName,
		PluginDir:    p.cfg.PluginDir,
		SplitCount:   int(p.cfg.SplitCount),
		Devices:      inv,
		Allocator:    alloc,
		Observer:     p.allocateMetrics,
		Clock:        p.deps.Clock,
		OnKubelet: func(ctx context.Context) {
			publisher.SetPodIdentification(alloc.Identify(ctx))
		},
		OnRegistration: func(err error) {
			// The probes' thresholds give the kubelet time to come back
			// before liveness restarts the plugin.
			p.health.Set(health.Registration, true, err)
			if err != nil {
				publisher.SetReadiness(nodestatus.Readiness{Reason: nodestatus.ReasonNotRegistered, Message: err.Error()})
				return
			}
			devices := len(inv.Devices())
			publisher.SetReadiness(nodestatus.Readiness{Ready: true, Reason: nodestatus.ReasonRegistered,
				Message: fmt.Sprintf("serving %d GPUs as %d %s devices", devices, devices*int(p.cfg.SplitCount), p.cfg.ResourceName)})
		},
	})
	g.Go(func() error { return server.Run(ctx) })
}

// kubeletPods returns the client of the kubelet's pod-resources API, or
// nil when none is configured.
func (p *Plugin) kubeletPods(ctx context.Context) allocator.KubeletPods {
	if p.cfg.PodResourcesSocket == "" {
		return nil
	}
	client, err := podresources.New(p.cfg.PodResourcesSocket)
	if err != nil {
		klog.FromContext(ctx).Info("Not asking the kubelet which pod each Allocate serves", "err", err)
		return nil
	}
	context.AfterFunc(ctx, func() { _ = client.Close() })
	return client
}

// serveDRA starts the DRA kubelet plugin, which publishes the GPUs as
// ResourceSlices and prepares the claims kube-scheduler allocated.
func (p *Plugin) serveDRA(ctx context.Context, g *errgroup.Group, inv *inventory.Inventory, caches *caches, publisher *nodestatus.Publisher, driver *dra.Driver) error {
	// The kubelet-plugin helper registers with the kubelet itself; started
	// is as far as the probes can see.
	p.health.Set(health.Registration, true, errors.New("the DRA kubelet plugin has not started yet"))
	server := dra.NewServer(dra.ServerConfig{
		NodeName:     p.cfg.NodeName,
		Kube:         p.deps.Kube,
		Inventory:    inv,
		Cordoned:     caches.cordoned(p.cfg.NodeName),
		Scaling:      p.scaling(),
		PluginDir:    p.cfg.DRAPluginDir,
		RegistrarDir: p.cfg.PluginRegistryDir,
		OnStarted: func() {
			p.health.Set(health.Registration, true, nil)
			publisher.SetReadiness(nodestatus.Readiness{Ready: true, Reason: nodestatus.ReasonRegistered,
				Message: fmt.Sprintf("serving %d GPUs as devices of DRA driver %s", len(inv.Devices()), gpuv1alpha1.DRADriverName)})
		},
	}, driver)
	if err := caches.onSpecChange(server.Trigger); err != nil {
		return err
	}
	g.Go(func() error { return server.Run(ctx) })
	p.reconcileDRAMIG(ctx, g, inv, driver)
	return nil
}

// watchHealth follows the GPUs' health into the inventory, which both
// front ends and the GPUNode read.
func (p *Plugin) watchHealth(ctx context.Context, g *errgroup.Group, inv *inventory.Inventory, publisher *nodestatus.Publisher) {
	logger := klog.FromContext(ctx)
	g.Go(func() error {
		err := p.deps.Backend.WatchHealth(ctx, func(ev gpu.HealthEvent) {
			if inv.SetHealth(ev) {
				logger.Info("GPU health changed", "uuid", ev.UUID, "healthy", ev.Health.Healthy, "message", ev.Health.Message)
				publisher.Trigger()
			}
		})
		if err != nil {
			logger.Error(err, "GPU health is not watched")
			p.health.Set(health.HealthWatch, true, err)
		}
		return nil
	})
}

// claimPublishDelay is the least time between two GPUNode writes caused by
// claims: a burst of pods landing on the node costs one write.
const claimPublishDelay = time.Second

// publishClaimChanges republishes the GPUNode, whose free memory the
// prepared claims change, once per claimPublishDelay while they change.
func (p *Plugin) publishClaimChanges(ctx context.Context, driver *dra.Driver, publisher *nodestatus.Publisher) {
	changed := driver.Changed()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		select {
		case <-ctx.Done():
			return
		case <-p.deps.Clock.After(claimPublishDelay):
		}
		// Taken before the publisher reads the claims, so that a change
		// after this read is not missed.
		changed = driver.Changed()
		publisher.Trigger()
	}
}

// allocatedMemory is the GPUNode's source of allocated memory: the
// prepared claims in DRA mode, none (the extender's) otherwise.
func allocatedMemory(driver *dra.Driver) func() map[string]int64 {
	if driver == nil {
		return nil
	}
	return driver.MemoryMiB
}

// kubeletAPI says how the daemon serves the kubelet.
func (p *Plugin) kubeletAPI() gpuv1alpha1.KubeletAPI {
	if p.cfg.Mode == config.ModeDRA {
		return gpuv1alpha1.KubeletAPIDRA
	}
	return gpuv1alpha1.KubeletAPIDevicePlugin
}

// scaling is what the node offers of each GPU.
func (p *Plugin) scaling() nodestatus.Scaling {
	return nodestatus.Scaling{SplitCount: p.cfg.SplitCount, MemoryScaling: p.cfg.MemoryScaling, CoreScaling: p.cfg.CoreScaling}
}

// writePreloadFile writes the file mounted as the containers'
// /etc/ld.so.preload, naming the library inside the container, after
// removing what a write cut short by a crash left beside it.
func (p *Plugin) writePreloadFile() error {
	path := p.cfg.PreloadFilePath()
	if path == "" {
		return nil
	}
	if _, err := atomicfile.RemoveStale(path); err != nil {
		return fmt.Errorf("writing the preload file %s: %w", path, err)
	}
	content := []byte(p.cfg.LibraryContainerPath + "\n")
	if old, err := os.ReadFile(path); err == nil && string(old) == string(content) {
		return nil
	}
	if err := atomicfile.Write(path, content, 0o644, nil); err != nil {
		return fmt.Errorf("writing the preload file %s: %w", path, err)
	}
	return nil
}

// serveMetrics serves /metrics, /healthz and /readyz until ctx ends.
func (p *Plugin) serveMetrics(ctx context.Context, reg *prometheus.Registry) error {
	lis, err := net.Listen("tcp", p.cfg.MetricsAddress)
	if err != nil {
		return fmt.Errorf("serving metrics on %s: %w", p.cfg.MetricsAddress, err)
	}
	p.metricsAddr <- lis.Addr().String()
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics.Handler(reg))
	mux.Handle("/healthz", health.Handler(p.health.Live))
	mux.Handle("/readyz", health.Handler(p.health.Ready))
	srv := httpserver.New(ctx, mux, httpserver.DefaultTimeouts())
	if err := httpserver.Serve(ctx, stopTimeout, httpserver.Listener{Server: srv, Listener: lis}); err != nil {
		return fmt.Errorf("serving metrics: %w", err)
	}
	return nil
}

// markStopped publishes Ready=False so that the scheduler stops placing
// pods here at once rather than when the Lease goes stale.
func (p *Plugin) markStopped(ctx context.Context, publisher *nodestatus.Publisher) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	defer cancel()
	publisher.SetReadiness(nodestatus.Readiness{Reason: nodestatus.ReasonStopped, Message: "the device plugin stopped"})
	if err := publisher.Publish(ctx); err != nil {
		klog.FromContext(ctx).Error(err, "Marking the GPUNode not ready")
	}
}

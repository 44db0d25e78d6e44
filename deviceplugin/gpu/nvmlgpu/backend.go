package nvmlgpu

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

// Options tune the backend.
type Options struct {
	// IgnoredXIDs are application XIDs that do not mark a GPU unhealthy.
	IgnoredXIDs []uint64
	// RecoveryPeriod is how long an unhealthy GPU must go without a
	// critical event, and answer NVML, before it is healthy again.
	RecoveryPeriod time.Duration
	// ProbePeriod is how often GPUs are probed for loss and recovery.
	ProbePeriod time.Duration
	// SysfsRoot is where PCI devices are looked up for a NUMA node NVML
	// does not report ("/sys").
	SysfsRoot string
	// ProcRoot is where the driver's table of MIG capability devices is
	// read ("/proc").
	ProcRoot string
	// Clock is the time source.
	Clock clock.PassiveClock
	// DynamicMIG publishes a GPU in MIG mode as itself, with its MIG
	// geometry, for instances made on demand, instead of the instances
	// on it.
	DynamicMIG bool
}

// Backend reads GPUs, their health and their use through NVML.
type Backend struct {
	lib  nvml.Interface
	opts Options

	mu          sync.Mutex
	initialised bool
	devices     []*device
}

// device is a discovered GPU and what the health watch knows of it.
type device struct {
	uuid         string
	handle       nvml.Device
	healthy      bool
	reason       string
	lastCritical time.Time
}

var _ gpu.Backend = (*Backend)(nil)

// health is the device's health as the watch last saw it; b.mu is held.
func (d *device) health() gpu.Health {
	if d.healthy {
		return gpu.Healthy()
	}
	return gpu.Unhealthy(d.reason)
}

// New returns a backend over lib: nvml.New() on a real node, a mock in tests.
func New(lib nvml.Interface, opts Options) *Backend {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.SysfsRoot == "" {
		opts.SysfsRoot = "/sys"
	}
	if opts.ProcRoot == "" {
		opts.ProcRoot = "/proc"
	}
	if opts.ProbePeriod <= 0 {
		opts.ProbePeriod = 10 * time.Second
	}
	return &Backend{lib: lib, opts: opts}
}

// ErrNoDriver says that the node has no usable NVIDIA driver.
var ErrNoDriver = errors.New("no NVIDIA driver")

// init loads and initialises NVML once.
func (b *Backend) init() error {
	if b.initialised {
		return nil
	}
	switch ret := b.lib.Init(); ret {
	case nvml.SUCCESS:
		b.initialised = true
		return nil
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return fmt.Errorf("%w: the NVML library (libnvidia-ml.so.1) was not found; install the NVIDIA driver on the node and make the library visible to the plugin", ErrNoDriver)
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return fmt.Errorf("%w: the NVML library was found but the NVIDIA kernel driver is not loaded", ErrNoDriver)
	case nvml.ERROR_NO_PERMISSION:
		return fmt.Errorf("%w: no permission to open the GPU devices (the plugin must run privileged)", ErrNoDriver)
	default:
		return fmt.Errorf("initialising NVML: %v", ret)
	}
}

// Close shuts NVML down.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.initialised {
		return nil
	}
	b.initialised = false
	if ret := b.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("shutting NVML down: %v", ret)
	}
	return nil
}

// snapshot returns the discovered devices.
func (b *Backend) snapshot() []*device {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*device(nil), b.devices...)
}

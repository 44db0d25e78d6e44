package dra

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/hamicore"
	"github.com/tessera-gpu/tessera/deviceplugin/nodestatus"
)

// CheckpointFile is the checkpoint's name in the plugin's data directory.
const CheckpointFile = "checkpoint.json"

// Devices is the node's GPUs as discovery and health last saw them.
type Devices interface {
	// Devices returns the GPUs, ordered by index.
	Devices() []gpu.Device
	// Changed returns a channel that is closed at the next change.
	Changed() <-chan struct{}
}

// DriverConfig is what a Driver needs.
type DriverConfig struct {
	// NodeName is the node, and the name of its device pool.
	NodeName string
	// Devices are the node's GPUs.
	Devices Devices
	// Scaling is the capacity published for each GPU.
	Scaling nodestatus.Scaling
	// Library is the HAMi-core library mounted into containers.
	Library hamicore.Library
	// CDIDir is the container runtime's CDI spec directory.
	CDIDir string
	// GPUCDIDevices says that the node's CDI spec names each GPU (the cdi
	// device-list strategy): requests then get those devices rather than
	// NVIDIA_VISIBLE_DEVICES.
	GPUCDIDevices bool
	// StateDir holds the checkpoint; it must outlive the daemon.
	StateDir string
	// MIG makes the MIG instances of GPUs whose instances are made on
	// demand; nil when the daemon makes none.
	MIG MIGMaker
	// Clock times health reports; nil: the real clock.
	Clock clock.WithTicker
}

// Driver prepares and unprepares the node's allocated claims for the
// kubelet.
type Driver struct {
	cfg            DriverConfig
	cdi            *cdiWriter
	checkpointPath string

	// mu orders Prepare and Unprepare even when the kubelet-plugin helper
	// does not.
	mu    sync.Mutex
	state *checkpoint
	// changed is closed when the prepared claims change; see Changed.
	changed chan struct{}
}

var _ kubeletplugin.DRAPlugin = (*Driver)(nil)

// NewDriver reads the checkpoint a previous run left and opens the CDI
// spec directory, creating the directories that are missing.
func NewDriver(cfg DriverConfig) (*Driver, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if err := os.MkdirAll(cfg.StateDir, 0o750); err != nil {
		return nil, fmt.Errorf("creating the DRA plugin directory: %w", err)
	}
	path := filepath.Join(cfg.StateDir, CheckpointFile)
	state, err := loadCheckpoint(path)
	if err != nil {
		return nil, err
	}
	// Scaled memory hands out more than the GPU has, which only HAMi-core's
	// over-subscription makes safe.
	w, err := newCDIWriter(cfg.CDIDir, cfg.Library, cfg.Scaling.MemoryScaling > 1, cfg.GPUCDIDevices)
	if err != nil {
		return nil, err
	}
	return &Driver{cfg: cfg, cdi: w, checkpointPath: path, state: state, changed: make(chan struct{})}, nil
}

// PrepareResourceClaims writes the CDI specs of each claim's requests on
// this node and records them. A claim prepared before, by this process or
// an earlier one, gets the same answer again; its specs are written again
// where they are missing or differ, as after a reboot, which empties the
// spec directory but not the checkpoint, and after which the kubelet
// prepares every claim of its pods again.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	logger := klog.FromContext(ctx)
	result := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	changed := false
	for _, claim := range claims {
		if prepared, ok := d.state.Claims[claim.UID]; ok {
			if err := d.prepareAgain(ctx, claim.UID, prepared); err != nil {
				logger.Error(err, "Writing the CDI specs of a prepared claim again failed", "claim", klog.KObj(claim))
				result[claim.UID] = kubeletplugin.PrepareResult{Err: err}
				continue
			}
			result[claim.UID] = kubeletplugin.PrepareResult{Devices: prepared.devices()}
			continue
		}
		prepared, err := d.prepare(ctx, claim)
		if err == nil {
			d.state.Claims[claim.UID] = prepared
			if err = d.state.save(d.checkpointPath); err != nil {
				delete(d.state.Claims, claim.UID)
				err = errors.Join(err, d.removeSpecs(prepared), d.destroyInstances(ctx, prepared))
			}
		}
		if err != nil {
			logger.Error(err, "Preparing a claim failed", "claim", klog.KObj(claim))
			result[claim.UID] = kubeletplugin.PrepareResult{Err: err}
			continue
		}
		logger.Info("Prepared a claim", "claim", klog.KObj(claim), "requests", len(prepared.Requests))
		result[claim.UID] = kubeletplugin.PrepareResult{Devices: prepared.devices()}
		changed = true
	}
	if changed {
		d.notify()
	}
	return result, nil
}

// UnprepareResourceClaims destroys the MIG instances made for each claim,
// removes its CDI specs and forgets it. A claim not prepared here, or already unprepared, is no error; specs
// named for it are removed all the same, since a crash between writing
// them and saving the checkpoint leaves them unrecorded.
func (d *Driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	logger := klog.FromContext(ctx)
	result := make(map[types.UID]error, len(claims))
	changed := false
	for _, claim := range claims {
		prepared, ok := d.state.Claims[claim.UID]
		if !ok {
			result[claim.UID] = d.cdi.removeClaim(claim.UID)
			continue
		}
		if err := errors.Join(d.destroyInstances(ctx, prepared), d.removeSpecs(prepared)); err != nil {
			result[claim.UID] = err
			continue
		}
		delete(d.state.Claims, claim.UID)
		if err := d.state.save(d.checkpointPath); err != nil {
			d.state.Claims[claim.UID] = prepared
			result[claim.UID] = err
			continue
		}
		logger.Info("Unprepared a claim", "claim", claim.NamespacedName)
		result[claim.UID] = nil
		changed = true
	}
	if changed {
		d.notify()
	}
	return result, nil
}

// MIG returns what makes the driver's MIG instances, nil when it makes
// none.
func (d *Driver) MIG() MIGMaker { return d.cfg.MIG }

// HandleError logs errors of the background work, such as publishing
// ResourceSlices; the helper retries them.
func (d *Driver) HandleError(ctx context.Context, err error, msg string) {
	utilruntime.HandleErrorWithContext(ctx, err, msg)
}

// rewriteSpecs writes the specs of a prepared claim again where they are
// missing or differ. The CDI devices they make are recorded anew: a daemon
// restarted with another device-list strategy writes specs that expect
// the GPUs' own CDI devices, or no longer expect them.
func (d *Driver) rewriteSpecs(claim types.UID, p *preparedClaim) error {
	requests := slices.Clone(p.Requests)
	if err := d.writeSpecs(claim, requests); err != nil {
		return err
	}
	if slices.EqualFunc(requests, p.Requests, func(a, b preparedRequest) bool { return slices.Equal(a.CDIDevices, b.CDIDevices) }) {
		return nil
	}
	old := p.Requests
	p.Requests = requests
	if err := d.state.save(d.checkpointPath); err != nil {
		p.Requests = old
		return err
	}
	return nil
}

func (d *Driver) removeSpecs(p *preparedClaim) error {
	var errs []error
	for _, r := range p.Requests {
		errs = append(errs, d.cdi.remove(r.SpecName))
	}
	return errors.Join(errs...)
}

// devices is the kubelet's answer for a prepared claim: every allocated
// share, with the request's CDI devices on its first share only, since
// the kubelet passes on every ID it is given.
func (p *preparedClaim) devices() []kubeletplugin.Device {
	var out []kubeletplugin.Device
	for _, r := range p.Requests {
		for i, dev := range r.Devices {
			kd := kubeletplugin.Device{Requests: []string{r.Request}, PoolName: dev.Pool, DeviceName: dev.Device, ShareID: dev.ShareID}
			if i == 0 {
				kd.CDIDeviceIDs = r.CDIDevices
			}
			out = append(out, kd)
		}
	}
	return out
}

// String names a claim in errors.
func claimName(c *resourceapi.ResourceClaim) string {
	return fmt.Sprintf("%s/%s", c.Namespace, c.Name)
}

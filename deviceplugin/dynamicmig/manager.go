package dynamicmig

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

// Manager makes and destroys the node's MIG instances. It is safe for
// concurrent use.
type Manager struct {
	maker gpu.MIGMaker
	clock clock.PassiveClock
	// grace is how long an instance it made is kept while no allocation
	// it has seen needs it: the pod it was made for may not have reached
	// the caches yet. Once an allocation was seen needing it, it goes as
	// soon as none does.
	grace time.Duration

	mu sync.Mutex
	// made records the instances it made, for whom and when.
	made map[instanceKey]record
}

// instanceKey identifies a GPU instance on the node.
type instanceKey struct {
	gpu string
	id  int
}

// record is an instance the manager made.
type record struct {
	owner string
	at    time.Time
	// needed is set once a reconcile found a live allocation needing it.
	needed bool
}

// New returns a manager that makes instances through maker.
func New(maker gpu.MIGMaker, clk clock.PassiveClock, grace time.Duration) *Manager {
	return &Manager{maker: maker, clock: clk, grace: grace, made: map[instanceKey]record{}}
}

// Prepare returns the MIG device UUID of the instance want on the GPU for
// owner (what it is made for, such as one container of one pod), making
// it. An instance it already made for owner there is handed out again,
// as when the kubelet's answer must be written anew, and so is one of
// want's profile and placement that it has no record of: a daemon that
// restarted made it for the same owner, or it is a leftover just right.
// Any other instance on the slices want takes is a leftover (of a pod
// that ended, or of a daemon that stopped before destroying it), since
// the scheduler placed want where no live allocation lies: it is
// destroyed first.
func (m *Manager) Prepare(ctx context.Context, gpuUUID, owner string, want *gpuv1alpha1.MIGAllocation) (string, error) {
	logger := klog.FromContext(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	instances, err := m.maker.MIGInstances(ctx, gpuUUID)
	if err != nil {
		return "", fmt.Errorf("listing the MIG instances: %w", err)
	}
	for _, inst := range instances {
		key := instanceKey{gpuUUID, inst.GPUInstanceID}
		if r, known := m.made[key]; matches(inst, want) && inst.UUID != "" && (!known || r.owner == owner) {
			if !known {
				m.made[key] = record{owner: owner, at: m.clock.Now()}
				logger.Info("Handing out a MIG instance made before", "gpu", gpuUUID, "profile", want.Profile, "start", want.Placement.Start, "uuid", inst.UUID, "owner", owner)
			}
			return inst.UUID, nil
		}
		if !overlaps(inst.Placement, want.Placement) {
			continue
		}
		logger.Info("Destroying a leftover MIG instance where the new one goes", "gpu", gpuUUID, "gpuInstance", inst.GPUInstanceID, "start", inst.Placement.Start, "size", inst.Placement.Size)
		if err := m.maker.DestroyMIG(ctx, gpuUUID, inst.GPUInstanceID); err != nil {
			return "", fmt.Errorf("destroying the leftover MIG instance at memory slice %d: %w", inst.Placement.Start, err)
		}
		delete(m.made, key)
	}
	made, err := m.maker.CreateMIG(ctx, gpuUUID, want.ProfileID, want.Placement)
	if err != nil {
		return "", fmt.Errorf("making a %s MIG instance at memory slice %d: %w", want.Profile, want.Placement.Start, err)
	}
	m.made[instanceKey{gpuUUID, made.GPUInstanceID}] = record{owner: owner, at: m.clock.Now()}
	logger.Info("Made a MIG instance", "gpu", gpuUUID, "profile", want.Profile, "start", want.Placement.Start, "uuid", made.UUID, "owner", owner)
	return made.UUID, nil
}

// Destroy destroys the instance want on the GPU, if it is there, as when
// the claim it was made for is unprepared.
func (m *Manager) Destroy(ctx context.Context, gpuUUID string, want *gpuv1alpha1.MIGAllocation) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	instances, err := m.maker.MIGInstances(ctx, gpuUUID)
	if err != nil {
		return fmt.Errorf("listing the MIG instances: %w", err)
	}
	for _, inst := range instances {
		if !matches(inst, want) {
			continue
		}
		if err := m.maker.DestroyMIG(ctx, gpuUUID, inst.GPUInstanceID); err != nil {
			return fmt.Errorf("destroying the %s MIG instance at memory slice %d: %w", want.Profile, want.Placement.Start, err)
		}
		delete(m.made, instanceKey{gpuUUID, inst.GPUInstanceID})
		klog.FromContext(ctx).Info("Destroyed a MIG instance", "gpu", gpuUUID, "profile", want.Profile, "start", want.Placement.Start, "uuid", inst.UUID)
	}
	return nil
}

// Needed is a MIG instance that a live allocation holds.
type Needed struct {
	// GPU is the UUID of the GPU it is on.
	GPU string
	// MIG is the instance.
	MIG gpuv1alpha1.MIGAllocation
}

// Reconcile destroys the instances on the GPUs that no needed instance
// is: of a pod that ended, of an allocation that failed, or left by a
// daemon that stopped. An instance it made within the grace period is
// kept until an allocation is seen needing it. It goes on past a GPU it
// cannot read, and returns the errors.
func (m *Manager) Reconcile(ctx context.Context, gpus []string, needed []Needed) error {
	logger := klog.FromContext(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, g := range gpus {
		instances, err := m.maker.MIGInstances(ctx, g)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, inst := range instances {
			key := instanceKey{g, inst.GPUInstanceID}
			if isNeeded(g, inst, needed) {
				if r, ok := m.made[key]; ok {
					r.needed = true
					m.made[key] = r
				}
				continue
			}
			if m.recent(key) {
				continue
			}
			logger.Info("Destroying a MIG instance no allocation needs", "gpu", g, "gpuInstance", inst.GPUInstanceID, "start", inst.Placement.Start, "size", inst.Placement.Size)
			if err := m.maker.DestroyMIG(ctx, g, inst.GPUInstanceID); err != nil {
				errs = append(errs, err)
				continue
			}
			delete(m.made, key)
		}
	}
	return errors.Join(errs...)
}

// recent reports whether the manager made the instance within the grace
// period, and no reconcile has found it needed yet; m.mu is held.
func (m *Manager) recent(key instanceKey) bool {
	r, ok := m.made[key]
	return ok && !r.needed && m.clock.Since(r.at) < m.grace
}

func isNeeded(gpuUUID string, inst gpu.MadeMIG, needed []Needed) bool {
	for i := range needed {
		if needed[i].GPU == gpuUUID && matches(inst, &needed[i].MIG) {
			return true
		}
	}
	return false
}

// matches reports whether the instance is the one placed.
func matches(inst gpu.MadeMIG, want *gpuv1alpha1.MIGAllocation) bool {
	return inst.ProfileID == want.ProfileID && inst.Placement == want.Placement
}

// overlaps reports whether two runs of memory slices share one.
func overlaps(a, b gpuv1alpha1.MIGPlacement) bool {
	return a.Start < b.Start+b.Size && b.Start < a.Start+a.Size
}

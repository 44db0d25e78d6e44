package nodestatus

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	gpuac "github.com/tessera-gpu/tessera/generated/applyconfiguration/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
)

// FieldManager names the plugin's writes.
const FieldManager = "tessera-device-plugin"

// Source says what to publish.
type Source interface {
	// DriverVersion is the GPU driver's version.
	DriverVersion() string
	// Devices are the node's GPUs with their current health.
	Devices() []gpu.Device
}

// SpecSource returns the GPUs the administrator cordoned (the GPUNode's
// spec), as last seen.
type SpecSource func() []string

// Publisher keeps the node's GPUNode status current.
type Publisher struct {
	nodeName string
	tessera  versioned.Interface
	kube     kubernetes.Interface
	clock    clock.WithTicker
	scaling  Scaling
	period   time.Duration
	source   Source
	cordoned SpecSource
	hamiCore func() Readiness

	kick chan struct{}

	mu        sync.Mutex
	readiness Readiness
	ready     *metav1.Condition
	library   *metav1.Condition
	created   bool
}

// Config wires a Publisher.
type Config struct {
	// NodeName names the GPUNode and its Node.
	NodeName string
	// Tessera writes the GPUNode.
	Tessera versioned.Interface
	// Kube, when set, is used to make the GPUNode owned by its Node, so
	// that deleting the Node deletes the GPUNode.
	Kube kubernetes.Interface
	// Clock stamps and paces the heartbeats.
	Clock clock.WithTicker
	// Scaling turns physical GPUs into published ones.
	Scaling Scaling
	// Period is the heartbeat period.
	Period time.Duration
	// Source gives the GPUs and the driver version.
	Source Source
	// Cordoned may be nil: nothing is cordoned.
	Cordoned SpecSource
	// HAMiCore, when set, is checked at every write and published as the
	// HAMiCoreReady condition; nil publishes none.
	HAMiCore func() Readiness
}

// New returns a publisher; nothing is written until Publish or Run.
func New(cfg Config) *Publisher {
	if cfg.Cordoned == nil {
		cfg.Cordoned = func() []string { return nil }
	}
	return &Publisher{
		nodeName:  cfg.NodeName,
		tessera:   cfg.Tessera,
		kube:      cfg.Kube,
		clock:     cfg.Clock,
		scaling:   cfg.Scaling,
		period:    cfg.Period,
		source:    cfg.Source,
		cordoned:  cfg.Cordoned,
		hamiCore:  cfg.HAMiCore,
		kick:      make(chan struct{}, 1),
		readiness: Readiness{Reason: ReasonNotRegistered, Message: "waiting to register with the kubelet"},
	}
}

// SetReadiness changes the Ready condition and publishes soon.
func (p *Publisher) SetReadiness(r Readiness) {
	p.mu.Lock()
	p.readiness = r
	p.mu.Unlock()
	p.Trigger()
}

// Trigger asks Run to publish now rather than at the next heartbeat.
func (p *Publisher) Trigger() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Run publishes at once, then at every heartbeat and every Trigger, until
// ctx ends. A failed write is logged and retried at the next occasion.
func (p *Publisher) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	ticker := p.clock.NewTicker(p.period)
	defer ticker.Stop()
	for {
		if err := p.Publish(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "Publishing GPUNode status", "gpuNode", p.nodeName)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		case <-p.kick:
		}
	}
}

// Publish writes the status once, creating the GPUNode if it is absent.
func (p *Publisher) Publish(ctx context.Context) error {
	if err := p.ensureExists(ctx); err != nil {
		return err
	}
	_, err := p.tessera.GpuV1alpha1().GPUNodes().ApplyStatus(ctx, p.statusApply(), metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if apierrors.IsNotFound(err) {
		// Deleted since: create it again at the next occasion.
		p.mu.Lock()
		p.created = false
		p.mu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("applying GPUNode %s status: %w", p.nodeName, err)
	}
	return nil
}

// ensureExists creates the GPUNode, owned by its Node when there is one,
// and reads the Ready condition it already had.
func (p *Publisher) ensureExists(ctx context.Context) error {
	p.mu.Lock()
	created := p.created
	p.mu.Unlock()
	if created {
		return nil
	}
	nodes := p.tessera.GpuV1alpha1().GPUNodes()
	existing, err := nodes.Get(ctx, p.nodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		obj := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: p.nodeName}}
		if ref, err := p.nodeOwner(ctx); err != nil {
			return err
		} else if ref != nil {
			obj.OwnerReferences = []metav1.OwnerReference{*ref}
		}
		existing, err = nodes.Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager})
		if apierrors.IsAlreadyExists(err) {
			existing, err = nodes.Get(ctx, p.nodeName, metav1.GetOptions{})
		}
		if err == nil {
			klog.FromContext(ctx).Info("Created GPUNode", "gpuNode", p.nodeName)
		}
	}
	if err != nil {
		return fmt.Errorf("creating GPUNode %s: %w", p.nodeName, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.created = true
	if p.ready == nil {
		if c := meta.FindStatusCondition(existing.Status.Conditions, gpuv1alpha1.GPUNodeReady); c != nil {
			p.ready = c.DeepCopy()
		}
	}
	if p.library == nil {
		if c := meta.FindStatusCondition(existing.Status.Conditions, gpuv1alpha1.GPUNodeHAMiCoreReady); c != nil {
			p.library = c.DeepCopy()
		}
	}
	return nil
}

func (p *Publisher) nodeOwner(ctx context.Context) (*metav1.OwnerReference, error) {
	if p.kube == nil {
		return nil, nil
	}
	node, err := p.kube.CoreV1().Nodes().Get(ctx, p.nodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Node %s: %w", p.nodeName, err)
	}
	return &metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}, nil
}

// statusApply builds the whole status the plugin owns.
func (p *Publisher) statusApply() *gpuac.GPUNodeApplyConfiguration {
	now := metav1.NewTime(p.clock.Now().Truncate(time.Second))
	devices := p.scaling.Devices(p.source.Devices())
	sum := Summarize(devices, p.cordoned())

	p.mu.Lock()
	ready := p.readiness.condition(gpuv1alpha1.GPUNodeReady, p.ready, now)
	p.ready = &ready
	var library *metav1.Condition
	if p.hamiCore != nil {
		c := p.hamiCore().condition(gpuv1alpha1.GPUNodeHAMiCoreReady, p.library, now)
		p.library, library = &c, &c
	}
	p.mu.Unlock()

	status := gpuac.GPUNodeStatus().
		WithDriverVersion(p.source.DriverVersion()).
		WithLastHeartbeatTime(now).
		WithGPUCount(sum.GPUCount).
		WithModels(sum.Models).
		WithMemoryMiB(sum.MemoryMiB).
		WithAllocatableMemoryMiB(sum.AllocatableMemoryMiB).
		WithConditions(metav1ac.Condition().
			WithType(ready.Type).
			WithStatus(ready.Status).
			WithReason(ready.Reason).
			WithMessage(ready.Message).
			WithLastTransitionTime(ready.LastTransitionTime))
	if library != nil {
		status.WithConditions(metav1ac.Condition().
			WithType(library.Type).
			WithStatus(library.Status).
			WithReason(library.Reason).
			WithMessage(library.Message).
			WithLastTransitionTime(library.LastTransitionTime))
	}
	for _, d := range devices {
		dev := gpuac.GPUDevice().
			WithUUID(d.UUID).
			WithIndex(d.Index).
			WithModel(d.Model).
			WithMemoryMiB(d.MemoryMiB).
			WithCores(d.Cores).
			WithShareLimit(d.ShareLimit).
			WithNUMANode(d.NUMANode).
			WithHealth(d.Health)
		if d.HealthMessage != "" {
			dev.WithHealthMessage(d.HealthMessage)
		}
		if m := d.MIG; m != nil {
			dev.WithMIG(gpuac.MIGInstance().
				WithParentUUID(m.ParentUUID).
				WithProfile(m.Profile).
				WithGPUInstanceID(m.GPUInstanceID).
				WithComputeInstanceID(m.ComputeInstanceID).
				WithComputePercent(m.ComputePercent))
		}
		status.WithDevices(dev)
	}
	return gpuac.GPUNode(p.nodeName).WithStatus(status)
}

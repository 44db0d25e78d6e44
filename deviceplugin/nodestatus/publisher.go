package nodestatus

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
	gpulisters "github.com/tessera-gpu/tessera/generated/listers/gpu/v1alpha1"
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

// Publisher keeps the node's GPUNode status current, writing it only when
// it differs from what the API holds.
type Publisher struct {
	nodeName string
	tessera  versioned.Interface
	kube     kubernetes.Interface
	gpuNodes gpulisters.GPUNodeLister
	clock    clock.WithTicker
	scaling  Scaling
	period   time.Duration
	source   Source
	cordoned SpecSource
	hamiCore func() Readiness
	api      gpuv1alpha1.KubeletAPI
	// allocated, when set, gives the memory allocated on each GPU.
	allocated func() map[string]int64

	kick chan struct{}

	mu sync.Mutex
	// readiness is nil until the plugin knows whether it serves: until
	// then the Ready condition the API holds is kept, so that a restarted
	// plugin does not rewrite it only to write it back a moment later.
	readiness *Readiness
	// identification is how the plugin learns which pod the kubelet
	// allocates for; empty until it knows, and then what the API holds is
	// kept, as with readiness.
	identification gpuv1alpha1.PodIdentification
	created        bool
	renewals       func() uint64
	// staleMark is the scheduler's stale mark last seen, and
	// renewalsAtMark the Lease renewals counted when it was first seen.
	staleMark      metav1.Time
	renewalsAtMark uint64
}

// Config wires a Publisher.
type Config struct {
	// NodeName names the GPUNode and its Node.
	NodeName string
	// Tessera writes the GPUNode.
	Tessera versioned.Interface
	// GPUNodes reads the GPUNode as the API holds it, from an informer
	// that the caller starts and syncs before Run; the status is written
	// only when it differs from what the GPUNode holds.
	GPUNodes gpulisters.GPUNodeLister
	// Kube, when set, is used to make the GPUNode owned by its Node, so
	// that deleting the Node deletes the GPUNode.
	Kube kubernetes.Interface
	// Clock stamps the status and paces its checks.
	Clock clock.WithTicker
	// Scaling turns physical GPUs into published ones.
	Scaling Scaling
	// Period is how often the status is compared with the GPUNode's, in
	// case a change was missed; comparing writes nothing.
	Period time.Duration
	// Source gives the GPUs and the driver version.
	Source Source
	// Cordoned may be nil: nothing is cordoned.
	Cordoned SpecSource
	// HAMiCore, when set, is checked at every comparison and published as
	// the HAMiCoreReady condition; nil publishes none.
	HAMiCore func() Readiness
	// KubeletAPI is how the daemon serves the kubelet, published so that
	// Tessera's scheduler leaves DRA nodes alone; empty: DevicePlugin.
	KubeletAPI gpuv1alpha1.KubeletAPI
	// AllocatedMemoryMiB, when set, returns the memory in MiB allocated on
	// each GPU, by UUID, and the status then carries freeMemoryMiB: in DRA
	// mode, where the daemon reads the allocations from ResourceClaims and
	// no scheduler extender writes it. Nil leaves the field to the
	// extender.
	AllocatedMemoryMiB func() map[string]int64
	// Renewals counts the successful renewals of the node's Lease. When
	// set, the scheduler's stale mark on the Ready condition is replaced
	// only after the Lease was renewed since the plugin saw the mark: a
	// plugin that can write its GPUNode but not its Lease would otherwise
	// undo the mark as fast as the scheduler makes it.
	Renewals func() uint64
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
		gpuNodes:  cfg.GPUNodes,
		clock:     cfg.Clock,
		scaling:   cfg.Scaling,
		period:    cfg.Period,
		source:    cfg.Source,
		cordoned:  cfg.Cordoned,
		renewals:  cfg.Renewals,
		hamiCore:  cfg.HAMiCore,
		api:       cmp.Or(cfg.KubeletAPI, gpuv1alpha1.KubeletAPIDevicePlugin),
		allocated: cfg.AllocatedMemoryMiB,
		kick:      make(chan struct{}, 1),
	}
}

// SetReadiness changes the Ready condition and publishes soon.
func (p *Publisher) SetReadiness(r Readiness) {
	p.mu.Lock()
	p.readiness = &r
	p.mu.Unlock()
	p.Trigger()
}

// SetPodIdentification changes how the GPUNode says the plugin learns
// which pod the kubelet allocates for, and publishes soon.
func (p *Publisher) SetPodIdentification(id gpuv1alpha1.PodIdentification) {
	p.mu.Lock()
	p.identification = id
	p.mu.Unlock()
	p.Trigger()
}

// Trigger asks Run to compare the status with the GPUNode's now rather
// than at the next period: the GPUs, the readiness or the GPUNode changed.
func (p *Publisher) Trigger() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Run publishes at once, then at every period and every Trigger, until
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

// Publish creates the GPUNode if it is absent and writes its status if it
// differs from what the plugin would write.
func (p *Publisher) Publish(ctx context.Context) error {
	observed, err := p.gpuNodes.Get(p.nodeName)
	var current *gpuv1alpha1.GPUNodeStatus
	switch {
	case err == nil:
		current = &observed.Status
	case apierrors.IsNotFound(err):
		// Not yet created, or deleted since: create it (again).
		p.mu.Lock()
		p.created = false
		p.mu.Unlock()
	default:
		return fmt.Errorf("reading GPUNode %s: %w", p.nodeName, err)
	}
	if err := p.ensureExists(ctx); err != nil {
		return err
	}
	desired := p.status(current)
	if current != nil && upToDate(current, &desired) {
		return nil
	}
	_, err = p.tessera.GpuV1alpha1().GPUNodes().ApplyStatus(ctx, statusApply(p.nodeName, &desired), metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if apierrors.IsNotFound(err) {
		// Deleted since: create it again at the next occasion.
		p.mu.Lock()
		p.created = false
		p.mu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("applying GPUNode %s status: %w", p.nodeName, err)
	}
	klog.FromContext(ctx).V(2).Info("Published GPUNode status", "gpuNode", p.nodeName)
	return nil
}

// ensureExists creates the GPUNode, owned by its Node when there is one.
func (p *Publisher) ensureExists(ctx context.Context) error {
	p.mu.Lock()
	created := p.created
	p.mu.Unlock()
	if created {
		return nil
	}
	nodes := p.tessera.GpuV1alpha1().GPUNodes()
	_, err := nodes.Get(ctx, p.nodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		obj := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: p.nodeName}}
		if ref, err := p.owner(ctx); err != nil {
			return err
		} else if ref != nil {
			obj.OwnerReferences = []metav1.OwnerReference{*ref}
		}
		_, err = nodes.Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		} else if err == nil {
			klog.FromContext(ctx).Info("Created GPUNode", "gpuNode", p.nodeName)
		}
	}
	if err != nil {
		return fmt.Errorf("creating GPUNode %s: %w", p.nodeName, err)
	}
	p.mu.Lock()
	p.created = true
	p.mu.Unlock()
	return nil
}

func (p *Publisher) owner(ctx context.Context) (*metav1.OwnerReference, error) {
	if p.kube == nil {
		return nil, nil
	}
	return nodeOwner(ctx, p.kube, p.nodeName)
}

// nodeOwner returns a reference to the Node, or nil when there is none.
func nodeOwner(ctx context.Context, kube kubernetes.Interface, name string) (*metav1.OwnerReference, error) {
	node, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Node %s: %w", name, err)
	}
	return &metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}, nil
}

// status builds the whole status the plugin owns, keeping the Ready
// condition's transition time from current when its status is unchanged.
func (p *Publisher) status(current *gpuv1alpha1.GPUNodeStatus) gpuv1alpha1.GPUNodeStatus {
	now := metav1.NewTime(p.clock.Now().Truncate(time.Second))
	devices := p.scaling.Devices(p.source.Devices())
	sum := Summarize(devices, p.cordoned())
	var previous, previousLibrary *metav1.Condition
	if current != nil {
		previous = meta.FindStatusCondition(current.Conditions, gpuv1alpha1.GPUNodeReady)
		previousLibrary = meta.FindStatusCondition(current.Conditions, gpuv1alpha1.GPUNodeHAMiCoreReady)
	}
	p.mu.Lock()
	readiness := p.readiness
	identification := p.identification
	keepMark := p.keepStaleMark(previous)
	p.mu.Unlock()
	if identification == "" && current != nil {
		identification = current.PodIdentification
	}
	var ready metav1.Condition
	switch {
	case keepMark:
		ready = *previous
	case readiness != nil:
		ready = readiness.condition(gpuv1alpha1.GPUNodeReady, previous, now)
	case previous != nil:
		ready = *previous
	default:
		ready = Readiness{Reason: ReasonNotRegistered, Message: "waiting to register with the kubelet"}.condition(gpuv1alpha1.GPUNodeReady, nil, now)
	}
	conditions := []metav1.Condition{ready}
	if p.hamiCore != nil {
		conditions = append(conditions, p.hamiCore().condition(gpuv1alpha1.GPUNodeHAMiCoreReady, previousLibrary, now))
	}
	status := gpuv1alpha1.GPUNodeStatus{
		Devices:              devices,
		DriverVersion:        p.source.DriverVersion(),
		GPUCount:             sum.GPUCount,
		Models:               sum.Models,
		MemoryMiB:            sum.MemoryMiB,
		AllocatableMemoryMiB: sum.AllocatableMemoryMiB,
		KubeletAPI:           p.api,
		PodIdentification:    identification,
		Conditions:           conditions,
	}
	if p.allocated != nil {
		status.FreeMemoryMiB = ptr.To(FreeMemoryMiB(devices, p.cordoned(), p.allocated()))
	}
	return status
}

// keepStaleMark reports whether the Ready condition is the scheduler's
// stale mark and the Lease has not been renewed since the plugin first saw
// it. The caller holds p.mu.
func (p *Publisher) keepStaleMark(ready *metav1.Condition) bool {
	if p.renewals == nil || ready == nil || ready.Status != metav1.ConditionUnknown || ready.Reason != gpuv1alpha1.GPUNodeHeartbeatStale {
		return false
	}
	if !ready.LastTransitionTime.Equal(&p.staleMark) {
		p.staleMark, p.renewalsAtMark = ready.LastTransitionTime, p.renewals()
	}
	return p.renewals() == p.renewalsAtMark
}

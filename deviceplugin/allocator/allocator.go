package allocator

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
)

// FieldManager names the plugin's writes.
const FieldManager = "tessera-device-plugin"

// maxWriteAttempts bounds the retries of a status write that conflicts
// with another writer.
const maxWriteAttempts = 5

// Devices finds a physical GPU of the node.
type Devices interface {
	Device(uuid string) (gpu.Device, bool)
}

// Config wires an Allocator.
type Config struct {
	// NodeName is the node the plugin serves.
	NodeName string
	// ResourceName is the count resource the plugin serves: the kubelet
	// calls Allocate only for containers that ask for it.
	ResourceName corev1.ResourceName
	// Tessera reads and writes GPUAllocations.
	Tessera versioned.Interface
	// Kube reads pods the cache has not seen.
	Kube kubernetes.Interface
	// Allocations are the node's GPUAllocations; Pods lists the node's
	// pods. Both follow the API server; it is read when they have not
	// caught up yet.
	Allocations *NodeAllocations
	// Pods lists the node's pods.
	Pods corelisters.PodLister
	// Devices are the node's GPUs, to check that a placed GPU exists and is healthy.
	Devices Devices
	// Clock stamps allocatedTime.
	Clock clock.PassiveClock
	// LookupTimeout bounds the wait for an allocation the cache has not
	// seen; PollInterval is the pause between reads meanwhile.
	LookupTimeout time.Duration
	// PollInterval is the pause between API reads while waiting.
	PollInterval time.Duration
	// Response says what containers get besides their devices.
	Response ResponseConfig
	// Kubelet lists the pods the kubelet holds, through its pod-resources
	// API; nil when the plugin has no socket to ask (Identify).
	Kubelet KubeletPods
	// MIG makes the MIG instances the scheduler placed on GPUs that make
	// them on demand; nil when the node makes none.
	MIG MIGPreparer
}

// Allocator serves the kubelet from GPUAllocations. Calls are serialised:
// the kubelet admits one pod at a time, and each call reads what the
// previous one wrote.
type Allocator struct {
	cfg Config

	mu sync.Mutex
	// byPodResources says that the allocation an Allocate call serves is
	// the in-flight one whose pod the kubelet lists (Identify).
	byPodResources bool
}

// New returns an Allocator.
func New(cfg Config) *Allocator {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 100 * time.Millisecond
	}
	return &Allocator{cfg: cfg}
}

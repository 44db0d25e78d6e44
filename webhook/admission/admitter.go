package admission

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	gpulisters "github.com/tessera-gpu/tessera/generated/listers/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/webhook/draclaims"
)

// NamespaceGetter reads namespaces, in production from an informer's lister.
type NamespaceGetter interface {
	Get(name string) (*corev1.Namespace, error)
}

// GPUNodeLister lists the cluster's GPU inventory, in production from an
// informer's lister.
type GPUNodeLister interface {
	List(selector labels.Selector) ([]*gpuv1alpha1.GPUNode, error)
}

// ResourceQuotaLister reads namespaces' ResourceQuotas, in production from
// an informer's lister: admission never waits on the API server for them.
type ResourceQuotaLister interface {
	ResourceQuotas(namespace string) corelisters.ResourceQuotaNamespaceLister
}

var (
	_ NamespaceGetter     = corelisters.NamespaceLister(nil)
	_ GPUNodeLister       = gpulisters.GPUNodeLister(nil)
	_ ResourceQuotaLister = corelisters.ResourceQuotaLister(nil)
)

// Admitter mutates and validates pods. It keeps no state between reviews
// and is safe for concurrent use.
type Admitter struct {
	cfg        Config
	namespaces NamespaceGetter
	gpuNodes   GPUNodeLister
	quotas     ResourceQuotaLister
	claims     *draclaims.Translator
	templates  draclaims.ClaimTemplates
	podGroups  PodGroupAPI
	// kueueNamespaces is cfg.KueueManagedNamespaces, parsed.
	kueueNamespaces labels.Selector
}

// NewAdmitter returns an Admitter that reads namespaces (for the opt-out
// and mode labels), GPU inventory (for warnings, and in DRA mode the GPU
// sizes a memory percentage becomes) and ResourceQuotas (to refuse a pod
// over its namespace's GPU quota) through the given listers, and in DRA
// mode writes the pods' ResourceClaimTemplates through templates. It asks
// podGroups whether the cluster serves the PodGroups pods name.
func NewAdmitter(cfg Config, namespaces NamespaceGetter, gpuNodes GPUNodeLister, quotas ResourceQuotaLister,
	templates draclaims.ClaimTemplates, podGroups PodGroupAPI) (*Admitter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("webhook configuration: %w", err)
	}
	if namespaces == nil || gpuNodes == nil || quotas == nil || templates == nil || podGroups == nil {
		return nil, fmt.Errorf("webhook configuration: the namespace, GPUNode and ResourceQuota listers, the claim template client and the PodGroup API check are required")
	}
	// Validate parsed it already.
	kueueNamespaces, _ := labels.Parse(cfg.KueueManagedNamespaces)
	return &Admitter{
		cfg: cfg, namespaces: namespaces, gpuNodes: gpuNodes, quotas: quotas, templates: templates, podGroups: podGroups,
		claims:          draclaims.NewTranslator(cfg.DeviceClass, cfg.ResourceNames.Count, gpuNodes),
		kueueNamespaces: kueueNamespaces,
	}, nil
}

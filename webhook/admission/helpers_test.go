package admission

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	gpulisters "github.com/tessera-gpu/tessera/generated/listers/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/webhook/draclaims"
)

const testNamespace = "team-a"

// The GPU quota's resources, as strings for resources and limited.
const (
	quotaGPUs   = string(gpuv1alpha1.QuotaGPUs)
	quotaCores  = string(gpuv1alpha1.QuotaCores)
	quotaMemory = string(gpuv1alpha1.QuotaMemory)
)

// newAdmitter returns an Admitter with the default configuration over real
// listers filled with the given objects.
func newAdmitter(t testing.TB, cfg Config, objs ...runtime.Object) *Admitter {
	t.Helper()
	nsIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	gpuIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	quotaIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		var err error
		switch o.(type) {
		case *corev1.Namespace:
			err = nsIndexer.Add(o)
		case *gpuv1alpha1.GPUNode:
			err = gpuIndexer.Add(o)
		case *corev1.ResourceQuota:
			err = quotaIndexer.Add(o)
		default:
			t.Fatalf("unexpected object %T", o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	a, err := NewAdmitter(cfg, corelisters.NewNamespaceLister(nsIndexer), gpulisters.NewGPUNodeLister(gpuIndexer),
		corelisters.NewResourceQuotaLister(quotaIndexer), draclaims.NewClaimTemplates(fake.NewClientset(), templateLister(t)), podGroupsServed(true))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// templateLister is a ResourceClaimTemplate lister holding the templates,
// as the webhook's informer would.
func templateLister(t testing.TB, templates ...*resourceapi.ResourceClaimTemplate) resourcelisters.ResourceClaimTemplateLister {
	t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, tmpl := range templates {
		if err := indexer.Add(tmpl); err != nil {
			t.Fatal(err)
		}
	}
	return resourcelisters.NewResourceClaimTemplateLister(indexer)
}

func testContext(t testing.TB) context.Context {
	_, ctx := ktesting.NewTestContext(t)
	return ctx
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// gpuNode returns a GPUNode with one device per memory size, each with
// the given cores.
func gpuNode(name string, cores int32, memoryMiB ...int64) *gpuv1alpha1.GPUNode {
	n := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for i, m := range memoryMiB {
		n.Status.Devices = append(n.Status.Devices, gpuv1alpha1.GPUDevice{
			UUID: name + "-gpu-" + string(rune('a'+i)), Index: int32(i), Model: "NVIDIA A100",
			MemoryMiB: m, Cores: cores, ShareLimit: 10, Health: gpuv1alpha1.GPUHealthy,
		})
	}
	return n
}

// resources returns a ResourceList from name: quantity pairs.
func resources(pairs ...string) corev1.ResourceList {
	if len(pairs) == 0 {
		return nil
	}
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return l
}

// limited returns a container with those limits and, as the API server
// defaults them, the same requests.
func limited(name string, pairs ...string) corev1.Container {
	return corev1.Container{Name: name, Image: "cuda", Resources: corev1.ResourceRequirements{
		Limits: resources(pairs...), Requests: resources(pairs...),
	}}
}

func pod(containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: testNamespace},
		Spec:       corev1.PodSpec{Containers: containers, SchedulerName: corev1.DefaultSchedulerName},
	}
}

// createRequest is the request the API server sends for creating p.
func createRequest(t testing.TB, p *corev1.Pod) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return &admissionv1.AdmissionRequest{
		UID:       types.UID("uid-1"),
		Kind:      podKind,
		Resource:  podResource,
		Name:      p.Name,
		Namespace: p.Namespace,
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: raw},
	}
}

// applyPatch applies a response's JSON patch to the pod of the request.
func applyPatch(t testing.TB, req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse) *corev1.Pod {
	t.Helper()
	out := &corev1.Pod{}
	decodePatched(t, req, resp, out)
	return out
}

// decodePatched applies a response's JSON patch to the object of the
// request and decodes the result into out.
func decodePatched(t testing.TB, req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse, out any) {
	t.Helper()
	raw := req.Object.Raw
	if len(resp.Patch) > 0 {
		if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
			t.Fatalf("patch type = %v, want JSONPatch", resp.PatchType)
		}
		patch, err := jsonpatch.DecodePatch(resp.Patch)
		if err != nil {
			t.Fatalf("decoding patch %s: %v", resp.Patch, err)
		}
		if raw, err = patch.Apply(raw); err != nil {
			t.Fatalf("applying patch %s: %v", resp.Patch, err)
		}
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
}

// mutated is the pod as the validating webhook receives it: after the
// mutation, as the API server applies it.
func mutated(t testing.TB, a *Admitter, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	req := createRequest(t, p)
	resp := a.Mutate(testContext(t), req)
	if !resp.Allowed {
		t.Fatalf("Mutate refused the pod: %s", resp.Result.Message)
	}
	return applyPatch(t, req, resp)
}

// checkWarnings checks that a admits the pod, as mutated, with the
// warnings want, each short enough to read on one line.
func checkWarnings(t *testing.T, a *Admitter, p *corev1.Pod, want []string) {
	t.Helper()
	resp := a.Validate(testContext(t), createRequest(t, mutated(t, a, p)))
	if !resp.Allowed {
		t.Fatalf("Validate refused the pod: %s", resp.Result.Message)
	}
	if diff := cmp.Diff(want, resp.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	for _, w := range resp.Warnings {
		// kubectl prints each warning on one line; keep them readable.
		if len(w) > 160 {
			t.Errorf("warning is %d characters long, want at most 160: %s", len(w), w)
		}
	}
}

package quota

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// resourceQuota is a quota in namespace ns with the hard limits given as
// key=value pairs.
func resourceQuota(ns, name string, hard map[corev1.ResourceName]string) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{}}}
	for k, v := range hard {
		q.Spec.Hard[k] = resource.MustParse(v)
	}
	return q
}

func set(hard int64) Limit { return by(hard, "gpu") }

func by(hard int64, quota string) Limit { return Limit{Hard: hard, Set: true, Quota: quota} }

func TestFromQuotas(t *testing.T) {
	scoped := resourceQuota("ns", "scoped", map[corev1.ResourceName]string{KeyMemory: "1"})
	scoped.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}
	selected := resourceQuota("ns", "selected", map[corev1.ResourceName]string{KeyGPUs: "1"})
	selected.Spec.ScopeSelector = &corev1.ScopeSelector{}
	tests := []struct {
		name   string
		quotas []*corev1.ResourceQuota
		want   Limits
	}{
		{"no quota limits nothing", nil, Limits{}},
		{"a quota on other resources limits nothing", []*corev1.ResourceQuota{
			resourceQuota("ns", "q", map[corev1.ResourceName]string{"requests.cpu": "4", "gpu.tessera.dev/memory": "1"}),
		}, Limits{}},
		{"each key is read", []*corev1.ResourceQuota{
			resourceQuota("ns", "q", map[corev1.ResourceName]string{KeyMemory: "40000", KeyCores: "300", KeyGPUs: "4"}),
		}, Limits{MemoryMiB: by(40000, "q"), Cores: by(300, "q"), GPUs: by(4, "q")}},
		{"the tightest of several quotas holds, resource by resource", []*corev1.ResourceQuota{
			resourceQuota("ns", "a", map[corev1.ResourceName]string{KeyMemory: "40000", KeyGPUs: "8"}),
			resourceQuota("ns", "b", map[corev1.ResourceName]string{KeyMemory: "50000", KeyGPUs: "2"}),
		}, Limits{MemoryMiB: by(40000, "a"), GPUs: by(2, "b")}},
		{"of equal limits the first quota by name is named", []*corev1.ResourceQuota{
			resourceQuota("ns", "z", map[corev1.ResourceName]string{KeyGPUs: "2"}),
			resourceQuota("ns", "m", map[corev1.ResourceName]string{KeyGPUs: "2"}),
		}, Limits{GPUs: by(2, "m")}},
		{"scoped quotas are left to ResourceQuota's admission", []*corev1.ResourceQuota{scoped, selected}, Limits{}},
		{"a limit between whole numbers admits the whole number below it", []*corev1.ResourceQuota{
			resourceQuota("ns", "q", map[corev1.ResourceName]string{KeyMemory: "1500500m", KeyGPUs: "2.5", KeyCores: "1k"}),
		}, Limits{MemoryMiB: by(1500, "q"), Cores: by(1000, "q"), GPUs: by(2, "q")}},
		{"a negative limit admits nothing", []*corev1.ResourceQuota{
			resourceQuota("ns", "q", map[corev1.ResourceName]string{KeyGPUs: "-1", KeyCores: "-0.5"}),
		}, Limits{Cores: by(-1, "q"), GPUs: by(-1, "q")}},
		{"a limit beyond an int64 limits nothing that can be asked", []*corev1.ResourceQuota{
			resourceQuota("ns", "q", map[corev1.ResourceName]string{KeyMemory: "1e30", KeyGPUs: "-1e30"}),
		}, Limits{MemoryMiB: by(math.MaxInt64, "q"), GPUs: by(math.MinInt64, "q")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := FromQuotas(tc.quotas); got != tc.want {
				t.Errorf("FromQuotas = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestExceeded(t *testing.T) {
	limits := Limits{MemoryMiB: set(40000), Cores: set(200), GPUs: set(4)}
	tests := []struct {
		name        string
		limits      Limits
		used, asked placement.Use
		want        string
	}{
		{"room for it", limits, placement.Use{MemoryMiB: 20000, Cores: 100, GPUs: 2}, placement.Use{MemoryMiB: 20000, Cores: 100, GPUs: 2}, ""},
		{"memory over the limit", limits, placement.Use{MemoryMiB: 30000}, placement.Use{MemoryMiB: 20000, GPUs: 1},
			"namespace team-a would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/memory (GPU memory in MiB): used 30000, asked 20000, limit 40000"},
		{"cores over the limit", limits, placement.Use{Cores: 150}, placement.Use{MemoryMiB: 1, Cores: 100, GPUs: 1},
			"namespace team-a would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/cores (GPU compute in percent of one GPU): used 150, asked 100, limit 200"},
		{"GPUs over the limit", limits, placement.Use{GPUs: 3}, placement.Use{GPUs: 2},
			"namespace team-a would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/gpus (GPUs): used 3, asked 2, limit 4"},
		{"a limit lowered below what is used takes no more of it", Limits{MemoryMiB: set(1000)}, placement.Use{MemoryMiB: 5000}, placement.Use{MemoryMiB: 1},
			"namespace team-a would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/memory (GPU memory in MiB): used 5000, asked 1, limit 1000"},
		{"asking for none of an exhausted resource fits", Limits{Cores: set(100)}, placement.Use{Cores: 300}, placement.Use{MemoryMiB: 1000, GPUs: 1}, ""},
		{"no limits, no quota", Limits{}, placement.Use{GPUs: 1000}, placement.Use{GPUs: 1000}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.limits.Exceeded("team-a", tc.used, tc.asked); got != tc.want {
				t.Errorf("Exceeded = %q, want %q", got, tc.want)
			}
			err := tc.limits.Check("team-a", tc.used, tc.asked)
			if (err == nil) != (tc.want == "") {
				t.Errorf("Check = %v, want an error iff %q", err, tc.want)
			}
		})
	}
}

func TestLister(t *testing.T) {
	kube := kubefake.NewClientset()
	informer := informers.NewSharedInformerFactory(kube, 0).Core().V1().ResourceQuotas()
	for _, q := range []*corev1.ResourceQuota{
		resourceQuota("a", "gpus", map[corev1.ResourceName]string{KeyGPUs: "4"}),
		resourceQuota("a", "memory", map[corev1.ResourceName]string{KeyMemory: "1000", KeyGPUs: "8"}),
		resourceQuota("b", "cpu", map[corev1.ResourceName]string{"requests.cpu": "4"}),
		resourceQuota("c", "cores", map[corev1.ResourceName]string{KeyCores: "50"}),
	} {
		if err := informer.Informer().GetIndexer().Add(q); err != nil {
			t.Fatal(err)
		}
	}
	l := NewLister(informer.Lister())
	if got, want := l.Limits("a"), (Limits{MemoryMiB: by(1000, "memory"), GPUs: by(4, "gpus")}); got != want {
		t.Errorf("Limits(a) = %+v, want %+v", got, want)
	}
	if got := l.Limits("b"); got.Enforced() {
		t.Errorf("Limits(b) = %+v, want none", got)
	}
	all := l.All()
	if len(all) != 2 || all["a"] != l.Limits("a") || all["c"] != (Limits{Cores: by(50, "cores")}) {
		t.Errorf("All = %+v, want namespaces a and c", all)
	}
}

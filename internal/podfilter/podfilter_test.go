package podfilter

import (
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// TestFilteredInformerSeesTheKeptPodsOnly: handlers added through the
// filtered informer hear of the pods the predicate keeps alone: added,
// updated, and deleted when deleted or no longer kept (a pending pod
// bound), as a list and watch that selected them would tell. Its lister
// finds the kept pods only, while the informer's own finds every pod.
func TestFilteredInformerSeesTheKeptPodsOnly(t *testing.T) {
	pod := func(name, scheduler string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec:       corev1.PodSpec{SchedulerName: scheduler},
		}
	}
	kube := fake.NewClientset(pod("ours-1", "tessera-scheduler"), pod("theirs-1", "default-scheduler"))
	shared := informers.NewSharedInformerFactory(kube, 0).Core().V1().Pods().Informer()
	// The profile's pending pods.
	pods := New(shared, func(p *corev1.Pod) bool { return p.Spec.SchedulerName == "tessera-scheduler" && p.Spec.NodeName == "" })

	var (
		mu    sync.Mutex
		heard []string
	)
	record := func(what string) func(obj any) {
		return func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			mu.Lock()
			defer mu.Unlock()
			heard = append(heard, what+" "+obj.(*corev1.Pod).Name)
		}
	}
	reg, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    record("add"),
		UpdateFunc: func(_, obj any) { record("update")(obj) },
		DeleteFunc: record("delete"),
	})
	if err != nil {
		t.Fatal(err)
	}
	go shared.RunWithContext(t.Context())
	if !cache.WaitForCacheSync(t.Context().Done(), reg.HasSynced) {
		t.Fatal("the handler never synced")
	}

	ctx := t.Context()
	update := func(name string, change func(*corev1.Pod)) {
		t.Helper()
		p, err := kube.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		change(p)
		if _, err := kube.CoreV1().Pods("ns").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Each step acts on the other profile's pod first, so that once the
	// handler has heard of the last step on the profile's, every event
	// for the other profile's pods has passed the filter.
	for _, p := range []*corev1.Pod{pod("theirs-2", "default-scheduler"), pod("ours-2", "tessera-scheduler")} {
		if _, err := kube.CoreV1().Pods("ns").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"theirs-1", "ours-1"} {
		update(name, func(p *corev1.Pod) { p.Labels = map[string]string{"edited": "yes"} })
	}
	for _, name := range []string{"theirs-1", "ours-1"} {
		update(name, func(p *corev1.Pod) { p.Spec.NodeName = "node-a" })
	}
	for _, name := range []string{"theirs-2", "ours-2"} {
		if err := kube.CoreV1().Pods("ns").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	want := []string{"add ours-1", "add ours-2", "update ours-1", "delete ours-1", "delete ours-2"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := heardNow(&mu, &heard)
		if slices.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the handler heard %q, want %q", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}

	if _, exists, err := shared.GetIndexer().GetByKey("ns/theirs-1"); !exists || err != nil {
		t.Fatalf("the informer's own store lost theirs-1 (%v)", err)
	}
	for _, name := range []string{"ours-1", "theirs-1"} {
		if _, err := pods.Lister().Pods("ns").Get(name); !apierrors.IsNotFound(err) {
			t.Errorf("the lister's Get(%s) = %v, want not found: the predicate does not keep it", name, err)
		}
	}
	if err := kube.CoreV1().Pods("ns").Delete(ctx, "ours-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Pods("ns").Create(ctx, pod("ours-3", "tessera-scheduler"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for !slices.Contains(heardNow(&mu, &heard), "add ours-3") {
		if time.Now().After(deadline) {
			t.Fatal("the handler never heard of ours-3")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got, err := pods.Lister().Pods("ns").Get("ours-3"); err != nil || got.Name != "ours-3" {
		t.Errorf("the lister's Get(ours-3) = %v, %v; want the pod", got, err)
	}
	for _, list := range []func(labels.Selector) ([]*corev1.Pod, error){pods.Lister().List, pods.Lister().Pods("ns").List} {
		got, err := list(labels.Everything())
		if err != nil || len(got) != 1 || got[0].Name != "ours-3" {
			t.Errorf("the lister lists %v, %v; want ours-3 alone", got, err)
		}
	}
}

func heardNow(mu *sync.Mutex, heard *[]string) []string {
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(*heard)
}

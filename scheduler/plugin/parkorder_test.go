package plugin

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// TestParkerParksLastInQueueOrderFirst queues pods to park and checks
// that the parker takes them last in kube-scheduler's queue order first:
// lowest priority, then youngest; a pod gone first of all.
func TestParkerParksLastInQueueOrderFirst(t *testing.T) {
	start := time.Unix(1000, 0)
	pod := func(name string, priority int32, age time.Duration) *v1.Pod {
		p := parkPod(name, nil)
		p.Spec.Priority = ptr.To(priority)
		p.CreationTimestamp = metav1.NewTime(start.Add(-age))
		return p
	}
	pods := []*v1.Pod{
		pod("high-old", 10, 2*time.Hour),
		pod("low-young", 0, time.Minute),
		pod("high-young", 10, time.Minute),
		pod("low-old", 0, time.Hour),
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, p := range pods {
		if err := indexer.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	pk := newParker(nil, corelisters.NewPodLister(indexer), make(chan struct{}), nil)
	defer pk.queue.ShutDown()
	for _, p := range pods {
		pk.queue.Add(cache.MetaObjectToName(p))
	}
	pk.queue.Add(cache.ObjectName{Namespace: "default", Name: "gone"})

	want := []string{"gone", "low-young", "low-old", "high-young", "high-old"}
	for i, name := range want {
		key, _ := pk.queue.Get()
		if key.Name != name {
			t.Fatalf("pod %d to park: %s, want %s (order %v)", i, key.Name, name, want)
		}
		pk.queue.Done(key)
	}
}

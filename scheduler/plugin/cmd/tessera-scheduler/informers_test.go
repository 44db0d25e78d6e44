package main

import (
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// TestPodInformerDeliversBoundPodsFirst: a handler reads every bound pod
// before the first waiting one, whatever order the pods were listed in,
// parked ones too (the screen keeps those from kube-scheduler's
// handlers); its plugins can index the pods.
func TestPodInformerDeliversBoundPodsFirst(t *testing.T) {
	var objects []any
	for i := range 40 {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%02d", i), Namespace: "default"}}
		switch i % 4 {
		case 0:
			pod.Spec.NodeName = "node-a"
		case 1:
			pod.Labels = map[string]string{gpuv1alpha1.ParkedLabel: "true"}
		}
		objects = append(objects, pod)
	}
	kube := fake.NewClientset()
	for _, obj := range objects {
		if err := kube.Tracker().Add(obj.(*v1.Pod)); err != nil {
			t.Fatal(err)
		}
	}
	informer := podInformer(kube, 0)
	// As kube-scheduler's DRA plugin does.
	if err := informer.AddIndexers(cache.Indexers{"node": func(obj any) ([]string, error) {
		return []string{obj.(*v1.Pod).Spec.NodeName}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		read []*v1.Pod
	)
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		mu.Lock()
		defer mu.Unlock()
		read = append(read, obj.(*v1.Pod))
	}}); err != nil {
		t.Fatal(err)
	}
	go informer.Run(t.Context().Done())
	if !cache.WaitForCacheSync(t.Context().Done(), informer.HasSynced) {
		t.Fatal("the informer never synced")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(read)
		mu.Unlock()
		if n >= 40 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(read) != 40 {
		t.Fatalf("read %d pods, want all 40", len(read))
	}
	for i, pod := range read {
		if bound := pod.Spec.NodeName != ""; bound != (i < 10) {
			t.Errorf("pod %d read is %s (bound %t); want the 10 bound pods first", i, pod.Name, bound)
		}
	}
}

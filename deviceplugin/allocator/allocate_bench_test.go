package allocator

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

// BenchmarkAllocateAgainstAPIServer measures one Allocate call for a pod
// whose allocation the plugin holds: the pod check and the status write to
// a real kube-apiserver. Creating the pod and its allocation is not timed.
func BenchmarkAllocateAgainstAPIServer(b *testing.B) {
	cp := framework.Start(b, framework.Options{})
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background().V(1)))
	defer cancel()
	kubeFactory := informers.NewSharedInformerFactory(cp.Kube, 0)
	pods := kubeFactory.Core().V1().Pods()
	allocs, err := NewNodeAllocations(cp.Tessera, pods.Informer(), "")
	if err != nil {
		b.Fatal(err)
	}
	kubeFactory.Start(ctx.Done())
	kubeFactory.WaitForCacheSync(ctx.Done())
	go allocs.Run(ctx)
	defer func() { cancel(); kubeFactory.Shutdown() }()

	a := New(Config{
		NodeName: testNode, Tessera: cp.Tessera, Kube: cp.Kube,
		Allocations: allocs, Pods: pods.Lister(), Devices: testDevices(),
		LookupTimeout: 5 * time.Second,
	})
	req := &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"GPU-a::0"}}}}
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		name := fmt.Sprintf("bench-%d", i)
		pod, err := cp.Kube.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "cuda"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		alloc := testAllocation(name, pod.UID, testNode, container("main", gpuv1alpha1.ContainerApp, dev("GPU-a", 0, 1000, 0)))
		alloc.Namespace, alloc.ResourceVersion, alloc.CreationTimestamp = "default", "", metav1.Time{}
		if _, err := cp.Tessera.GpuV1alpha1().GPUAllocations("default").Create(ctx, alloc, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		// As the scheduler does: the allocation first, then the binding.
		binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name}, Target: corev1.ObjectReference{Kind: "Node", Name: testNode}}
		if err := cp.Kube.CoreV1().Pods("default").Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		for !slices.ContainsFunc(allocs.List(), func(a *gpuv1alpha1.GPUAllocation) bool { return a.Name == name }) {
			time.Sleep(time.Millisecond)
		}
		b.StartTimer()
		if _, err := a.Allocate(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

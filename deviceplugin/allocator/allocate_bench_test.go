package allocator

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/generated/informers/externalversions"
	"github.com/tessera-gpu/tessera/test/framework"
)

// BenchmarkAllocateAgainstAPIServer measures one Allocate call for a pod
// whose allocation the cache holds: the pod check and the status write to
// a real kube-apiserver. Creating the pod and its allocation is not timed.
func BenchmarkAllocateAgainstAPIServer(b *testing.B) {
	cp := framework.Start(b, framework.Options{})
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background().V(1)))
	defer cancel()
	gpuFactory := externalversions.NewSharedInformerFactory(cp.Tessera, 0)
	kubeFactory := informers.NewSharedInformerFactory(cp.Kube, 0)
	allocs := gpuFactory.Gpu().V1alpha1().GPUAllocations()
	pods := kubeFactory.Core().V1().Pods()
	allocs.Informer()
	pods.Informer()
	gpuFactory.Start(ctx.Done())
	kubeFactory.Start(ctx.Done())
	gpuFactory.WaitForCacheSync(ctx.Done())
	kubeFactory.WaitForCacheSync(ctx.Done())
	defer func() { cancel(); gpuFactory.Shutdown(); kubeFactory.Shutdown() }()

	a := New(Config{
		NodeName: testNode, Tessera: cp.Tessera, Kube: cp.Kube,
		Allocations: allocs.Lister(), Pods: pods.Lister(), Devices: testDevices(),
		LookupTimeout: 5 * time.Second,
	})
	req := &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"GPU-a::0"}}}}
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		name := fmt.Sprintf("bench-%d", i)
		pod, err := cp.Kube.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{NodeName: testNode, Containers: []corev1.Container{{Name: "main", Image: "cuda"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		alloc := testAllocation(name, pod.UID, testNode, container("main", gpuv1alpha1.ContainerApp, dev("GPU-a", 0, 1000, 0)))
		alloc.Namespace, alloc.ResourceVersion, alloc.CreationTimestamp = "default", "", metav1.Time{}
		if _, err := cp.Tessera.GpuV1alpha1().GPUAllocations("default").Create(ctx, alloc, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		for {
			got, err := allocs.Lister().GPUAllocations("default").Get(name)
			_, perr := pods.Lister().Pods("default").Get(name)
			if err == nil && perr == nil && got.Status.Phase == "" {
				break
			}
			time.Sleep(time.Millisecond)
		}
		b.StartTimer()
		if _, err := a.Allocate(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

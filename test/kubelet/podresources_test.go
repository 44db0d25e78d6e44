package kubelet

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	"k8s.io/kubernetes/pkg/kubelet/apis/podresources"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

// TestPodResourcesNameThePodBeingAdmitted runs the kubelet's own
// pod-resources server over its device manager, as the kubelet serves it:
// it lists the pod the kubelet is admitting and no pod it has yet to
// admit. So with two allocations in flight on the node (the scheduler
// binds without waiting when the GPUNode says podIdentification
// PodResources), the plugin serves each pod its own, whichever the
// kubelet admits first; the node's oldest in-flight allocation, which the
// plugin serves without the API, would hand the first pod admitted here
// the other's GPU.
func TestPodResourcesNameThePodBeingAdmitted(t *testing.T) {
	cp, logger, ctx, node, dir := startNode(t, "kubelet-node", fourGPUs)
	cfg := pluginConfig(node, filepath.Join(dir, "gpus.yaml"))
	cfg.PodResourcesSocket = filepath.Join(dir, "pod-resources", "kubelet.sock")
	kl := startKubelet(t, logger, nil)
	kl.servePodResources(ctx, t, cfg.PodResourcesSocket)
	t.Cleanup(runPlugin(ctx, t, cp, cfg))
	kl.waitForDevices(t, logger, 4*splitCount)
	framework.WaitFor(t, time.Minute, "the GPUNode to say its plugin asks the kubelet", func() (bool, string) {
		gn, err := cp.Tessera.GpuV1alpha1().GPUNodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return gn.Status.PodIdentification == gpuv1alpha1.PodIdentificationPodResources, fmt.Sprintf("podIdentification %q", gn.Status.PodIdentification)
	})

	one := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "cuda", Resources: gpus(1)}}},
		}
	}
	// a-first is older, and first by name too: the oldest in flight.
	first := framework.CreateBoundPod(ctx, t, cp, node, one("a-first"), placed("main", gpuv1alpha1.ContainerApp, slice("GPU-k-0", 0, 3000, 30)))
	second := framework.CreateBoundPod(ctx, t, cp, node, one("b-second"), placed("main", gpuv1alpha1.ContainerApp, slice("GPU-k-1", 1, 7000, 70)))

	for _, admitted := range []struct {
		pod            *corev1.Pod
		gpu, limit, sm string
	}{
		{pod: second, gpu: "GPU-k-1", limit: "7000m", sm: "70"},
		{pod: first, gpu: "GPU-k-0", limit: "3000m", sm: "30"},
	} {
		opts, err := kl.admit(ctx, admitted.pod)
		if err != nil {
			t.Fatalf("admitting %s: %v", admitted.pod.Name, err)
		}
		env := envOf(opts["main"])
		if env["NVIDIA_VISIBLE_DEVICES"] != admitted.gpu || env["CUDA_DEVICE_MEMORY_LIMIT_0"] != admitted.limit || env["CUDA_DEVICE_SM_LIMIT"] != admitted.sm {
			t.Errorf("%s got %s with %s and SM %s, want its own %s with %s and SM %s", admitted.pod.Name,
				env["NVIDIA_VISIBLE_DEVICES"], env["CUDA_DEVICE_MEMORY_LIMIT_0"], env["CUDA_DEVICE_SM_LIMIT"], admitted.gpu, admitted.limit, admitted.sm)
		}
		a, err := cp.Tessera.GpuV1alpha1().GPUAllocations(admitted.pod.Namespace).Get(ctx, admitted.pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if a.Status.Phase != gpuv1alpha1.AllocationAllocated {
			t.Errorf("allocation of %s is %q, want Allocated", admitted.pod.Name, a.Status.Phase)
		}
	}
}

// envOf returns a container's environment from its device options.
func envOf(o *devicemanager.DeviceRunContainerOptions) map[string]string {
	env := map[string]string{}
	if o == nil {
		return env
	}
	for _, e := range o.Envs {
		env[e.Name] = e.Value
	}
	return env
}

// servePodResources serves the kubelet's pod-resources API at socket, from
// the kubelet's own server over the device manager and the kubelet's
// pods, until the test ends.
func (k *kubelet) servePodResources(ctx context.Context, t *testing.T, socket string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(socket), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	server := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(server, podresources.NewV1PodResourcesServer(ctx, podresources.PodResourcesProviders{
		Pods:             k,
		Devices:          devicesProvider{k.mgr},
		Cpus:             noResources{},
		Memory:           noResources{},
		DynamicResources: noResources{},
	}))
	go func() { _ = server.Serve(l) }()
	t.Cleanup(server.Stop)
}

// GetActivePods returns the pods the kubelet has admitted or is admitting.
func (k *kubelet) GetActivePods() []*corev1.Pod { return k.activePods() }

// GetPods returns the same pods: none has ended.
func (k *kubelet) GetPods() []*corev1.Pod { return k.activePods() }

// GetPodByName finds one of them.
func (k *kubelet) GetPodByName(namespace, name string) (*corev1.Pod, bool) {
	pods := k.activePods()
	i := slices.IndexFunc(pods, func(p *corev1.Pod) bool { return p.Namespace == namespace && p.Name == name })
	if i < 0 {
		return nil, false
	}
	return pods[i], true
}

// devicesProvider answers for the device manager as the kubelet's
// container manager does.
type devicesProvider struct{ mgr *devicemanager.ManagerImpl }

func (d devicesProvider) UpdateAllocatedDevices(logger klog.Logger) {
	d.mgr.UpdateAllocatedDevices(logger)
}

func (d devicesProvider) GetDevices(podUID, containerName string) []*podresourcesv1.ContainerDevices {
	return containerDevices(d.mgr.GetDevices(podUID, containerName))
}

func (d devicesProvider) GetAllocatableDevices(logger klog.Logger) []*podresourcesv1.ContainerDevices {
	return containerDevices(d.mgr.GetAllocatableDevices(logger))
}

func containerDevices(all devicemanager.ResourceDeviceInstances) []*podresourcesv1.ContainerDevices {
	var out []*podresourcesv1.ContainerDevices
	for resource, devices := range all {
		cd := &podresourcesv1.ContainerDevices{ResourceName: resource}
		for id := range devices {
			cd.DeviceIds = append(cd.DeviceIds, id)
		}
		out = append(out, cd)
	}
	return out
}

// noResources is a node with no CPU, memory or DRA managers to report.
type noResources struct{}

func (noResources) GetCPUs(*corev1.Pod, *corev1.Container) []int64 { return nil }
func (noResources) GetPodCPUs(string) []int64                      { return nil }
func (noResources) GetAllocatableCPUs() []int64                    { return nil }
func (noResources) GetMemory(klog.Logger, *corev1.Pod, *corev1.Container) []*podresourcesv1.ContainerMemory {
	return nil
}
func (noResources) GetPodMemory(klog.Logger, string) []*podresourcesv1.ContainerMemory { return nil }
func (noResources) GetAllocatableMemory(klog.Logger) []*podresourcesv1.ContainerMemory { return nil }
func (noResources) GetDynamicResources(klog.Logger, *corev1.Pod, *corev1.Container) []*podresourcesv1.DynamicResource {
	return nil
}

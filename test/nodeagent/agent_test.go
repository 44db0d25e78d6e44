package nodeagent

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// fakePlugin is a device plugin with four devices that prefers the highest
// IDs and records every Allocate.
type fakePlugin struct {
	pluginapi.UnimplementedDevicePluginServer
	mu        sync.Mutex
	allocated [][]string
}

func (p *fakePlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{GetPreferredAllocationAvailable: true}, nil
}

func (p *fakePlugin) ListAndWatch(_ *pluginapi.Empty, s grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	var devs []*pluginapi.Device
	for i := range 4 {
		devs = append(devs, &pluginapi.Device{ID: fmt.Sprintf("dev-%d", i), Health: pluginapi.Healthy})
	}
	if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: devs}); err != nil {
		return err
	}
	<-s.Context().Done()
	return nil
}

func (p *fakePlugin) GetPreferredAllocation(_ context.Context, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	r := req.ContainerRequests[0]
	ids := slices.Clone(r.AvailableDeviceIDs)
	slices.Sort(ids)
	slices.Reverse(ids)
	return &pluginapi.PreferredAllocationResponse{ContainerResponses: []*pluginapi.ContainerPreferredAllocationResponse{
		{DeviceIDs: ids[:r.AllocationSize]},
	}}, nil
}

func (p *fakePlugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	ids := req.ContainerRequests[0].DevicesIds
	p.mu.Lock()
	p.allocated = append(p.allocated, ids)
	p.mu.Unlock()
	return &pluginapi.AllocateResponse{ContainerResponses: []*pluginapi.ContainerAllocateResponse{
		{Envs: map[string]string{"DEVICES": fmt.Sprint(ids)}},
	}}, nil
}

func gpuPod(name string, initCount, appCount int64) *corev1.Pod {
	limits := func(n int64) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Limits: corev1.ResourceList{"example.com/gpu": *resource.NewQuantity(n, resource.DecimalSI)}}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: k8stypes.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: "node-1",
			Containers: []corev1.Container{{Name: "app", Resources: limits(appCount)}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if initCount > 0 {
		pod.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: limits(initCount)}}
	}
	return pod
}

// TestAgentAdmitsPodsThroughThePlugin registers a plugin the way a device
// plugin does and checks that a bound pod's containers are allocated in the
// kubelet's order, steered by the plugin's preference, with init devices
// reused, that the node advertises the devices, and that the pod runs.
func TestAgentAdmitsPodsThroughThePlugin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	kube := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}})
	agent := &Agent{NodeName: "node-1", PluginDir: dir, Kube: kube, DeviceResources: []string{"example.com/gpu"}}
	go func() { _ = agent.Run(ctx) }()
	// A plugin serves once kubelet.sock exists: the starting agent clears
	// the directory first, as the kubelet does.
	waitKubeletSocket(ctx, t, dir)

	plugin := &fakePlugin{}
	server := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(server, plugin)
	l, err := net.Listen("unix", filepath.Join(dir, "fake.sock"))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = server.Serve(l) }()
	defer server.Stop()

	// Register as a plugin does, once kubelet.sock exists.
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		conn, err := grpc.NewClient("unix://"+filepath.Join(dir, "kubelet.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return false, nil
		}
		defer func() { _ = conn.Close() }()
		_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
			Version: pluginapi.Version, Endpoint: "fake.sock", ResourceName: "example.com/gpu",
			Options: &pluginapi.DevicePluginOptions{GetPreferredAllocationAvailable: true},
		})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("registering the plugin: %v", err)
	}

	pod := gpuPod("p", 1, 2)
	if _, err := kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := kube.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Fatalf("the pod never ran: %v", err)
	}

	plugin.mu.Lock()
	allocated := slices.Clone(plugin.allocated)
	plugin.mu.Unlock()
	// The init container gets the preferred (highest) device; the app
	// container reuses it and takes the next preferred one.
	want := [][]string{{"dev-3"}, {"dev-3", "dev-2"}}
	if fmt.Sprint(allocated) != fmt.Sprint(want) {
		t.Errorf("Allocate calls = %v, want %v", allocated, want)
	}
	results := agent.Results(pod.UID)
	if len(results) != 2 || results[0].Container != "init" || results[1].Container != "app" {
		t.Errorf("results = %+v, want init then app", results)
	}
	node, err := kube.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q := node.Status.Allocatable["example.com/gpu"]; q.Value() != 4 {
		t.Errorf("node allocatable example.com/gpu = %s, want 4", q.String())
	}

	// A pod asking for more devices than are free fails admission.
	if _, err := kube.CoreV1().Pods("default").Create(ctx, gpuPod("big", 0, 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := kube.CoreV1().Pods("default").Get(ctx, "big", metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodFailed && got.Status.Reason == "UnexpectedAdmissionError", nil
	})
	if err != nil {
		t.Fatalf("a pod asking for more devices than free did not fail admission: %v", err)
	}
}

func waitKubeletSocket(ctx context.Context, t *testing.T, dir string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		info, err := os.Stat(filepath.Join(dir, "kubelet.sock"))
		return err == nil && info.Mode()&os.ModeSocket != 0, nil
	})
	if err != nil {
		t.Fatalf("kubelet.sock was never served: %v", err)
	}
}

// TestAgentClearsThePluginDirectoryOnStart checks that a starting agent
// removes every file in the plugin directory, the sockets of plugins
// registered before included, and keeps folders, as the kubelet's device
// manager does: that is how a plugin learns that the kubelet restarted.
func TestAgentClearsThePluginDirectoryOnStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	stale, err := net.Listen("unix", filepath.Join(dir, "old-plugin.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Close()
	for _, name := range []string{"kubelet.sock", "notes"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "kept"), 0o755); err != nil {
		t.Fatal(err)
	}
	agent := &Agent{NodeName: "node-1", PluginDir: dir, Kube: fake.NewClientset()}
	go func() { _ = agent.Run(ctx) }()
	waitKubeletSocket(ctx, t, dir)
	var left []string
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if want := []string{"kept", "kubelet.sock"}; !slices.Equal(left, want) {
		t.Errorf("the plugin directory holds %v, want %v", left, want)
	}
}

// TestAgentFinishesGracefulDeletion checks that a pod deleted with a grace
// period is removed once the agent sees it, as a kubelet would after
// stopping its containers.
func TestAgentFinishesGracefulDeletion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pod := gpuPod("doomed", 0, 0)
	now := metav1.Now()
	pod.DeletionTimestamp = &now
	kube := fake.NewClientset(pod)
	agent := &Agent{NodeName: "node-1", PluginDir: t.TempDir(), Kube: kube}
	go func() { _ = agent.Run(ctx) }()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Pods("default").Get(ctx, "doomed", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("the terminating pod was never removed: %v", err)
	}
}

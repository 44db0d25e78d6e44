package nodeagent

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/utils/ptr"
)

const fakeDriver = "gpu.example.com"

// fakeDRADriver is a DRA plugin that records which claims it was asked to
// prepare and unprepare, and gives each claim the CDI device named for
// its UID.
type fakeDRADriver struct {
	drapb.UnimplementedDRAPluginServer
	registerapi.UnimplementedRegistrationServer
	endpoint string

	mu                   sync.Mutex
	prepared, unprepared []string // claim names, one per call
}

func (d *fakeDRADriver) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.DRAPlugin, Name: fakeDriver, Endpoint: d.endpoint}, nil
}

func (d *fakeDRADriver) NotifyRegistrationStatus(context.Context, *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	return &registerapi.RegistrationStatusResponse{}, nil
}

func (d *fakeDRADriver) NodePrepareResources(_ context.Context, req *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	resp := &drapb.NodePrepareResourcesResponse{Claims: map[string]*drapb.NodePrepareResourceResponse{}}
	for _, c := range req.Claims {
		d.prepared = append(d.prepared, c.Name)
		resp.Claims[c.Uid] = &drapb.NodePrepareResourceResponse{Devices: []*drapb.Device{{
			PoolName: "node-1", DeviceName: "gpu-0", CdiDeviceIds: []string{"example.com/gpu=" + c.Uid},
		}}}
	}
	return resp, nil
}

func (d *fakeDRADriver) NodeUnprepareResources(_ context.Context, req *drapb.NodeUnprepareResourcesRequest) (*drapb.NodeUnprepareResourcesResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	resp := &drapb.NodeUnprepareResourcesResponse{Claims: map[string]*drapb.NodeUnprepareResourceResponse{}}
	for _, c := range req.Claims {
		d.unprepared = append(d.unprepared, c.Name)
		resp.Claims[c.Uid] = &drapb.NodeUnprepareResourceResponse{}
	}
	return resp, nil
}

func (d *fakeDRADriver) calls() (prepared, unprepared []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.prepared), slices.Clone(d.unprepared)
}

// serve serves the driver's registration socket in registry and its DRA
// socket beside it until the test ends.
func (d *fakeDRADriver) serve(t *testing.T, registry string) {
	t.Helper()
	d.endpoint = filepath.Join(registry, "dra.sock")
	for socket, register := range map[string]func(*grpc.Server){
		filepath.Join(registry, fakeDriver+"-reg.sock"): func(s *grpc.Server) { registerapi.RegisterRegistrationServer(s, d) },
		d.endpoint: func(s *grpc.Server) { drapb.RegisterDRAPluginServer(s, d) },
	} {
		l, err := net.Listen("unix", socket)
		if err != nil {
			t.Fatal(err)
		}
		s := grpc.NewServer()
		register(s)
		go func() { _ = s.Serve(l) }()
		t.Cleanup(s.Stop)
	}
}

// claimPod is a running-to-be pod on node-1 whose container uses the
// claim, and the claim, allocated from the fake driver and reserved for it.
func claimPod(name string) (*corev1.Pod, *resourceapi.ResourceClaim) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: k8stypes.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: "node-1",
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(name + "-claim")}},
			Containers:     []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-claim", Namespace: "default", UID: k8stypes.UID("uid-" + name + "-claim")},
		Status: resourceapi.ResourceClaimStatus{
			Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
				{Request: "gpu", Driver: fakeDriver, Pool: "node-1", Device: "gpu-0"},
			}}},
			ReservedFor: []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: name, UID: pod.UID}},
		},
	}
	return pod, claim
}

// TestRestartedAgentKeepsWhatTheKubeletCheckpoints restarts the agent as
// the kubelet restarts: the claim of a pod deleted while it was stopped is
// unprepared once it starts again, a running pod's claim is not prepared
// again and its containers keep their CDI devices, and after a reboot the
// running pod's claim is prepared again, as the kubelet prepares it when
// it creates the pod's sandbox anew.
func TestRestartedAgentKeepsWhatTheKubeletCheckpoints(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Socket paths must stay short.
	dir, err := os.MkdirTemp("", "agent-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	registry := filepath.Join(dir, "registry")
	if err := os.Mkdir(registry, 0o755); err != nil {
		t.Fatal(err)
	}
	driver := &fakeDRADriver{}
	driver.serve(t, registry)
	stays, staysClaim := claimPod("stays")
	goes, goesClaim := claimPod("goes")
	kube := fake.NewClientset(stays, staysClaim, goes, goesClaim)
	agent := &Agent{NodeName: "node-1", PluginDir: filepath.Join(dir, "device-plugins"), PluginRegistryDir: registry, Kube: kube}
	run := func() (stop func()) {
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := agent.Run(runCtx); err != nil {
				t.Errorf("agent: %v", err)
			}
		}()
		return func() { cancel(); <-done }
	}
	// Unpreparing is at least once, as the kubelet's is: a call that the
	// agent's stop cuts off after the driver got it is made again on the
	// next start. So the claims unprepared are compared as a set.
	waitCalls := func(what string, prepared, unprepared []string) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			p, u := driver.calls()
			slices.Sort(p)
			slices.Sort(u)
			return slices.Equal(p, prepared) && slices.Equal(slices.Compact(u), unprepared), nil
		})
		if p, u := driver.calls(); err != nil {
			t.Fatalf("%s: the driver prepared %v and unprepared %v, want %v and %v", what, p, u, prepared, unprepared)
		}
	}
	wantCDI := []ContainerResult{{Container: "app", CDIDevices: []string{"example.com/gpu=uid-stays-claim"}}}
	waitResults := func(what string) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return slices.EqualFunc(agent.Results(stays.UID), wantCDI, resultsEqual), nil
		})
		if err != nil {
			t.Errorf("%s: pod stays has results %+v, want %+v", what, agent.Results(stays.UID), wantCDI)
		}
	}

	stop := run()
	waitCalls("first start", []string{"goes-claim", "stays-claim"}, nil)
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods("default").Get(ctx, "stays", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Fatalf("pod stays never ran: %v", err)
	}
	stop()

	if err := kube.CoreV1().Pods("default").Delete(ctx, "goes", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	stop = run()
	waitCalls("restarted after a pod was deleted", []string{"goes-claim", "stays-claim"}, []string{"goes-claim"})
	waitResults("restarted")
	stop()

	agent.Reboot()
	stop = run()
	defer stop()
	waitCalls("rebooted", []string{"goes-claim", "stays-claim", "stays-claim"}, []string{"goes-claim"})
	waitResults("rebooted")
}

func resultsEqual(a, b ContainerResult) bool {
	return a.Container == b.Container && a.Resource == b.Resource && slices.Equal(a.CDIDevices, b.CDIDevices)
}

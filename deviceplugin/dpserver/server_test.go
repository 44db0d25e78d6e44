package dpserver

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2/ktesting"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/inventory"
)

// fakeKubelet serves kubelet.sock and records registrations.
type fakeKubelet struct {
	pluginapi.UnimplementedRegistrationServer
	server *grpc.Server
	regs   chan *pluginapi.RegisterRequest
}

func startFakeKubelet(t *testing.T, dir string) *fakeKubelet {
	t.Helper()
	lis, err := net.Listen("unix", filepath.Join(dir, KubeletSocket))
	if err != nil {
		t.Fatal(err)
	}
	k := &fakeKubelet{server: grpc.NewServer(), regs: make(chan *pluginapi.RegisterRequest, 8)}
	pluginapi.RegisterRegistrationServer(k.server, k)
	go func() { _ = k.server.Serve(lis) }()
	t.Cleanup(k.server.Stop)
	return k
}

func (k *fakeKubelet) Register(_ context.Context, r *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	k.regs <- r
	return &pluginapi.Empty{}, nil
}

func (k *fakeKubelet) expectRegistration(t *testing.T) *pluginapi.RegisterRequest {
	t.Helper()
	select {
	case r := <-k.regs:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the plugin did not register")
		return nil
	}
}

type recordingAllocator struct {
	mu    sync.Mutex
	calls int
	err   error
}

func (a *recordingAllocator) Allocate(context.Context, *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	if a.err != nil {
		return nil, a.err
	}
	return &pluginapi.AllocateResponse{ContainerResponses: []*pluginapi.ContainerAllocateResponse{{Envs: map[string]string{"K": "V"}}}}, nil
}

func (a *recordingAllocator) Preferred(_ context.Context, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	return &pluginapi.PreferredAllocationResponse{ContainerResponses: []*pluginapi.ContainerPreferredAllocationResponse{{DeviceIDs: req.ContainerRequests[0].AvailableDeviceIDs[:1]}}}, nil
}

type recordingObserver struct {
	mu   sync.Mutex
	errs []error
}

func (o *recordingObserver) ObserveAllocate(_ time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.errs = append(o.errs, err)
}

type harness struct {
	dir       string
	inv       *inventory.Inventory
	server    *Server
	allocator *recordingAllocator
	observer  *recordingObserver
	regErrs   chan error
}

func startServer(t *testing.T) *harness {
	t.Helper()
	return startServerIn(t, t.TempDir(), clock.RealClock{})
}

// startServerIn runs a server on dir whose periodic checks follow clk.
func startServerIn(t *testing.T, dir string, clk clock.WithTicker) *harness {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	h := &harness{
		dir: dir,
		inv: inventory.New(gpu.Inventory{Devices: []gpu.Device{
			{UUID: "GPU-a", Index: 0, NUMANode: 1, Health: gpu.Healthy()},
			{UUID: "GPU-b", Index: 1, NUMANode: -1, Health: gpu.Healthy()},
		}}),
		allocator: &recordingAllocator{},
		observer:  &recordingObserver{},
		regErrs:   make(chan error, 64),
	}
	h.server = New(Config{
		ResourceName:   "nvidia.com/gpu",
		PluginDir:      h.dir,
		SplitCount:     3,
		Devices:        h.inv,
		Allocator:      h.allocator,
		Observer:       h.observer,
		Clock:          clk,
		CheckPeriod:    20 * time.Millisecond,
		OnRegistration: func(err error) { h.regErrs <- err },
	})
	done := make(chan error)
	go func() { done <- h.server.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		if _, err := os.Stat(h.server.SocketPath()); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("socket left behind after Run: %v", err)
		}
	})
	return h
}

// waitRegistered waits until the server says it is registered: the
// kubelet's answer has reached it.
func (h *harness) waitRegistered(t *testing.T) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case err := <-h.regErrs:
			if err == nil {
				return
			}
		case <-deadline:
			t.Fatal("the server never said it registered")
		}
	}
}

func (h *harness) dial(t *testing.T) pluginapi.DevicePluginClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+h.server.SocketPath(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return pluginapi.NewDevicePluginClient(conn)
}

func TestRegistersAndStreamsDevices(t *testing.T) {
	h := startServer(t)
	kubelet := startFakeKubelet(t, h.dir)
	reg := kubelet.expectRegistration(t)
	if reg.Version != pluginapi.Version || reg.ResourceName != "nvidia.com/gpu" || reg.Endpoint != "tessera-nvidia.com-gpu.sock" || !reg.Options.GetPreferredAllocationAvailable {
		t.Errorf("registration %+v", reg)
	}
	client := h.dial(t)
	opts, err := client.GetDevicePluginOptions(context.Background(), &pluginapi.Empty{})
	if err != nil || !opts.GetPreferredAllocationAvailable || opts.PreStartRequired {
		t.Errorf("options %+v, %v", opts, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := client.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id     string
		health string
		numa   int64
	}{
		{"GPU-a::0", pluginapi.Healthy, 1}, {"GPU-a::1", pluginapi.Healthy, 1}, {"GPU-a::2", pluginapi.Healthy, 1},
		{"GPU-b::0", pluginapi.Healthy, -1}, {"GPU-b::1", pluginapi.Healthy, -1}, {"GPU-b::2", pluginapi.Healthy, -1},
	}
	if len(first.Devices) != len(want) {
		t.Fatalf("%d devices, want GPUs x split = %d", len(first.Devices), len(want))
	}
	for i, w := range want {
		d := first.Devices[i]
		numa := int64(-1)
		if d.Topology != nil {
			numa = d.Topology.Nodes[0].ID
		}
		if d.ID != w.id || d.Health != w.health || numa != w.numa {
			t.Errorf("device %d = %s %s numa %d, want %s %s numa %d", i, d.ID, d.Health, numa, w.id, w.health, w.numa)
		}
	}

	h.inv.SetHealth(gpu.HealthEvent{UUID: "GPU-b", Health: gpu.Unhealthy("XID 79")})
	second, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range second.Devices {
		wantHealth := pluginapi.Healthy
		if d.ID[:5] == "GPU-b" {
			wantHealth = pluginapi.Unhealthy
		}
		if d.Health != wantHealth {
			t.Errorf("after GPU-b failed, %s is %s, want %s", d.ID, d.Health, wantHealth)
		}
	}
}

// TestListAndWatchSendsANewMIGLayout pins that the kubelet hears of MIG
// instances made and destroyed while the plugin runs: the inventory takes
// a new layout, and the stream sends the new devices.
func TestListAndWatchSendsANewMIGLayout(t *testing.T) {
	h := startServer(t)
	startFakeKubelet(t, h.dir).expectRegistration(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := h.dial(t).ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	// GPU-b goes into MIG mode with two instances.
	h.inv.SetDevices([]gpu.Device{
		{UUID: "GPU-a", Index: 0, NUMANode: 1, Health: gpu.Healthy()},
		{UUID: "MIG-b1", Index: 1, NUMANode: -1, Health: gpu.Healthy(), MIG: &gpu.MIG{ParentUUID: "GPU-b", Profile: "3g.20gb"}},
		{UUID: "MIG-b2", Index: 1, NUMANode: -1, Health: gpu.Healthy(), MIG: &gpu.MIG{ParentUUID: "GPU-b", Profile: "3g.20gb", GPUInstanceID: 2}},
	})
	next, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range next.Devices {
		got = append(got, d.ID)
	}
	want := []string{"GPU-a::0", "GPU-a::1", "GPU-a::2", "MIG-b1::0", "MIG-b1::1", "MIG-b1::2", "MIG-b2::0", "MIG-b2::1", "MIG-b2::2"}
	if !slices.Equal(got, want) {
		t.Errorf("devices after the new layout %v, want %v", got, want)
	}
}

func TestAllocateGoesThroughTheAllocator(t *testing.T) {
	h := startServer(t)
	kubelet := startFakeKubelet(t, h.dir)
	kubelet.expectRegistration(t)
	client := h.dial(t)
	resp, err := client.Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"GPU-a::0"}}}})
	if err != nil || resp.ContainerResponses[0].Envs["K"] != "V" {
		t.Fatalf("Allocate = %v, %v", resp, err)
	}
	h.allocator.mu.Lock()
	h.allocator.err = status.Error(codes.FailedPrecondition, "no pending GPUAllocation")
	h.allocator.mu.Unlock()
	_, err = client.Allocate(context.Background(), &pluginapi.AllocateRequest{})
	if st, _ := status.FromError(err); st.Code() != codes.FailedPrecondition || st.Message() != "no pending GPUAllocation" {
		t.Errorf("Allocate error %v, want the allocator's error unchanged", err)
	}
	pref, err := client.GetPreferredAllocation(context.Background(), &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{AvailableDeviceIDs: []string{"GPU-b::1"}, AllocationSize: 1}}})
	if err != nil || pref.ContainerResponses[0].DeviceIDs[0] != "GPU-b::1" {
		t.Errorf("GetPreferredAllocation = %v, %v", pref, err)
	}
	h.observer.mu.Lock()
	defer h.observer.mu.Unlock()
	if len(h.observer.errs) != 2 || h.observer.errs[0] != nil || h.observer.errs[1] == nil {
		t.Errorf("observer saw %v, want one success then one failure", h.observer.errs)
	}
}

func TestRegistersAgainWhenTheKubeletRestarts(t *testing.T) {
	h := startServer(t)
	first := startFakeKubelet(t, h.dir)
	first.expectRegistration(t)

	// A restarting kubelet removes every socket in the directory, then
	// serves kubelet.sock anew.
	first.server.Stop()
	for _, name := range []string{KubeletSocket, h.server.socketName} {
		if err := os.Remove(filepath.Join(h.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	second := startFakeKubelet(t, h.dir)
	second.expectRegistration(t)
	if _, err := os.Stat(h.server.SocketPath()); err != nil {
		t.Errorf("plugin socket not served again: %v", err)
	}
	if _, err := h.dial(t).GetDevicePluginOptions(context.Background(), &pluginapi.Empty{}); err != nil {
		t.Errorf("plugin not answering after re-registration: %v", err)
	}
}

// TestRegistersAgainOnTheDirectoryWatchAlone restarts the kubelet while
// the plugin's clock stands still, so that no periodic check runs: the
// watch of the plugin directory alone must bring the plugin back. A
// kubelet.sock created again often has the inode of the one before, which
// a check comparing the two cannot tell from no restart at all.
func TestRegistersAgainOnTheDirectoryWatchAlone(t *testing.T) {
	tests := []struct {
		name string
		// clear is what the restarting kubelet removes besides kubelet.sock.
		clear bool
	}{
		{name: "the kubelet clears the directory, as it does on start", clear: true},
		{name: "only kubelet.sock is created again"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A unix socket's path must stay under 108 bytes, which one
			// under t.TempDir() named for this test would not.
			dir, err := os.MkdirTemp("", "dpserver")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			first := startFakeKubelet(t, dir)
			before, err := os.Stat(filepath.Join(dir, KubeletSocket))
			if err != nil {
				t.Fatal(err)
			}
			h := startServerIn(t, dir, testingclock.NewFakeClock(time.Now()))
			first.expectRegistration(t)
			h.waitRegistered(t)

			// Stopping the server closes its listener, which removes
			// kubelet.sock.
			first.server.Stop()
			if tt.clear {
				if err := os.Remove(h.server.SocketPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
			}
			second := startFakeKubelet(t, dir)
			after, err := os.Stat(filepath.Join(dir, KubeletSocket))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("kubelet.sock created again with the same inode: %v", os.SameFile(before, after))
			second.expectRegistration(t)
			if _, err := h.dial(t).GetDevicePluginOptions(context.Background(), &pluginapi.Empty{}); err != nil {
				t.Errorf("plugin not answering after re-registration: %v", err)
			}
		})
	}
}

func TestReadinessFollowsRegistration(t *testing.T) {
	h := startServer(t)
	expect := func(registered bool) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case err := <-h.regErrs:
				if (err == nil) == registered {
					return
				}
			case <-deadline:
				t.Fatalf("no registration callback with registered=%v", registered)
			}
		}
	}
	expect(false) // waiting for the kubelet
	k := startFakeKubelet(t, h.dir)
	k.expectRegistration(t)
	expect(true)
	k.server.Stop()
	_ = os.Remove(filepath.Join(h.dir, KubeletSocket))
	expect(false)
}

// The kubelet may create its socket after the plugin starts watching and
// before it looks; the creation then arrives as an event about the socket
// the plugin registers with, which must not read as a restart.
func TestCreationSeenBeforeTheLookIsNoRestart(t *testing.T) {
	dir, err := os.MkdirTemp("", "dpserver")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	s := New(Config{ResourceName: "nvidia.com/gpu", PluginDir: dir})
	created := fsnotify.Event{Name: filepath.Join(dir, KubeletSocket), Op: fsnotify.Create}

	kubelet := startFakeKubelet(t, dir)
	registered, err := os.Stat(filepath.Join(dir, KubeletSocket))
	if err != nil {
		t.Fatal(err)
	}
	if reason := s.restartReason(created, registered); reason != "" {
		t.Errorf("the registered socket's creation read as %q", reason)
	}

	// A kubelet that restarts makes its socket again, often with the
	// same inode, but later.
	kubelet.server.Stop()
	time.Sleep(20 * time.Millisecond)
	startFakeKubelet(t, dir)
	if reason := s.restartReason(created, registered); reason == "" {
		t.Error("a socket created again did not read as a restart")
	}
}

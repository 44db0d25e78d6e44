package plugin

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/config"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu/nvmlgpu"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu/nvmlgpu/nvmlfake"
	"github.com/tessera-gpu/tessera/test/framework"
)

// TestPluginWithNVML runs the plugin on an NVML fake: a node without the
// driver says why it offers nothing, and a node whose GPU reports an XID
// shows it unhealthy to the kubelet and in its GPUNode until it recovers.
func TestPluginWithNVML(t *testing.T) {
	cp := framework.Start(t, framework.Options{})
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	start := func(node string, backend *nvmlgpu.Backend) (string, func()) {
		t.Helper()
		pluginDir := filepath.Join(t.TempDir(), "device-plugins")
		if err := os.Mkdir(pluginDir, 0o755); err != nil {
			t.Fatal(err)
		}
		cfg := config.Default()
		cfg.NodeName = node
		cfg.SplitCount = 2
		cfg.PluginDir = pluginDir
		cfg.MetricsAddress = ""
		_, stop := runPlugin(ctx, t, cp, cfg, backend)
		return pluginDir, func() {
			if err := stop(); err != nil {
				t.Errorf("Run: %v", err)
			}
		}
	}

	t.Run("a node without the driver says why it offers no GPU", func(t *testing.T) {
		fake, err := nvmlfake.New(gpus.A100_SXM4_40GB)
		if err != nil {
			t.Fatal(err)
		}
		fake.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
		_, stop := start("no-driver", nvmlgpu.New(fake, nvmlgpu.Options{}))
		defer stop()
		waitReady(ctx, t, cp, "no-driver", metav1.ConditionFalse, "NoGPUs")
		n, err := cp.Tessera.GpuV1alpha1().GPUNodes().Get(ctx, "no-driver", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := meta.FindStatusCondition(n.Status.Conditions, gpuv1alpha1.GPUNodeReady)
		if !strings.Contains(c.Message, "libnvidia-ml.so.1") || n.Status.GPUCount != 0 {
			t.Errorf("GPUNode status %+v, want no GPU and the missing library named", n.Status)
		}
	})

	t.Run("an XID marks the GPU unhealthy for the kubelet and in the GPUNode until it recovers", func(t *testing.T) {
		fake, err := nvmlfake.New(gpus.A100_SXM4_40GB, gpus.H100_SXM5_80GB)
		if err != nil {
			t.Fatal(err)
		}
		backend := nvmlgpu.New(fake, nvmlgpu.Options{
			IgnoredXIDs: config.DefaultIgnoredXIDs(), ProbePeriod: 50 * time.Millisecond, RecoveryPeriod: 2 * time.Second,
		})
		pluginDir, stop := start("nvml-node", backend)
		defer stop()
		client := startRegistrar(t, pluginDir).connect(t)
		waitReady(ctx, t, cp, "nvml-node", metav1.ConditionTrue, "Registered")
		stream, err := client.ListAndWatch(ctx, &pluginapi.Empty{})
		if err != nil {
			t.Fatal(err)
		}
		health := func(want string) {
			t.Helper()
			for {
				resp, err := stream.Recv()
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, d := range resp.Devices {
					got = append(got, d.Health)
				}
				if strings.Join(got, ",") == want {
					return
				}
			}
		}
		gpuNode := func(want gpuv1alpha1.GPUHealth, message string) {
			t.Helper()
			deadline := time.Now().Add(30 * time.Second)
			var last gpuv1alpha1.GPUDevice
			for time.Now().Before(deadline) {
				n, err := cp.Tessera.GpuV1alpha1().GPUNodes().Get(ctx, "nvml-node", metav1.GetOptions{})
				if err == nil && len(n.Status.Devices) == 2 {
					last = n.Status.Devices[1]
					if last.Health == want && last.HealthMessage == message && n.Status.DriverVersion == nvmlfake.DriverVersion {
						return
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
			t.Fatalf("GPUNode device 1 %+v, want %s %q", last, want, message)
		}
		health("Healthy,Healthy,Healthy,Healthy")
		fake.Send(nvml.EventData{Device: fake.Devices[1], EventType: nvml.EventTypeXidCriticalError, EventData: 79})
		health("Healthy,Healthy,Unhealthy,Unhealthy")
		gpuNode(gpuv1alpha1.GPUUnhealthy, "XID 79 critical error")
		health("Healthy,Healthy,Healthy,Healthy")
		gpuNode(gpuv1alpha1.GPUHealthy, "")
	})
}

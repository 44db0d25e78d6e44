package kueue

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/app"
	"github.com/tessera-gpu/tessera/scheduler/options"
	"github.com/tessera-gpu/tessera/test/framework"
	webhookapp "github.com/tessera-gpu/tessera/webhook/app"
)

// env is a control plane with the workload controllers, Kueue with the
// example teams' queues, Tessera's extender, kube-scheduler and webhook,
// and a goroutine playing the nodes' kubelets.
type env struct {
	cp      *framework.ControlPlane
	dynamic dynamic.Interface
	// extender is the host:port of the extender, or in plugin mode of
	// tessera-scheduler's metrics, either serving /metrics/state.
	extender string
}

// startEnv starts everything for one test; t.Cleanup stops it.
func startEnv(t *testing.T) *env { return startEnvWith(t, nil) }

// startEnvWith is startEnv with the extender's configuration changed by
// configure, unless it is nil.
func startEnvWith(t *testing.T, configure func(*options.Config)) *env {
	t.Helper()
	e := startQueues(t)
	e.startTessera(t, configure)
	return e
}

// startTessera starts Tessera's extender, with its configuration changed
// by configure unless it is nil, kube-scheduler calling it, the webhook
// and the kubelets.
func (e *env) startTessera(t *testing.T, configure func(*options.Config)) {
	t.Helper()
	e.extender = startExtender(t, e.cp, configure)
	e.cp.StartShippedScheduler(t, "http://"+e.extender)
	e.startWebhookAndKubelets(t)
}

// startPluginEnv is startEnv with tessera-scheduler, the shipped
// deploy/scheduler/tessera-scheduler-config.yaml with each of replace's
// keys replaced by its value, in place of kube-scheduler and the extender.
func startPluginEnv(t *testing.T, replace map[string]string) *env {
	t.Helper()
	return startPluginEnvOn(t, controlPlaneOptions(), replace)
}

// startPluginEnvOn is startPluginEnv on a control plane started with opts.
func startPluginEnvOn(t *testing.T, opts framework.Options, replace map[string]string) *env {
	t.Helper()
	bin, err := framework.SchedulerPluginBinary()
	if err != nil {
		t.Fatal(err)
	}
	e := startQueuesOn(t, opts)
	shipped, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "deploy", "scheduler", "tessera-scheduler-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	config := string(shipped)
	replace = maps.Clone(replace)
	replace["heartbeatMaxAge: 2m"] = "heartbeatMaxAge: 1h"
	for from, to := range replace {
		if !strings.Contains(config, from) {
			t.Fatalf("the shipped tessera-scheduler configuration no longer says %q", from)
		}
		config = strings.ReplaceAll(config, from, to)
	}
	e.extender = e.cp.StartSchedulerBinary(t, bin, config).MetricsAddress
	framework.WaitReady(t, "tessera-scheduler", "http://"+e.extender+"/readyz")
	e.startWebhookAndKubelets(t)
	return e
}

// startQueues starts the control plane with the workload controllers and
// Kueue with the example teams' queues.
func startQueues(t *testing.T) *env {
	t.Helper()
	return startQueuesOn(t, controlPlaneOptions())
}

// startQueuesOn is startQueues on a control plane started with opts.
func startQueuesOn(t *testing.T, opts framework.Options) *env {
	t.Helper()
	e := startKueueOn(t, filepath.Join(framework.RepoRoot(), framework.KueueConfigFile), opts)
	examples := filepath.Join(framework.RepoRoot(), "deploy", "examples", "kueue")
	if err := framework.ApplyManifests(context.Background(), e.cp.Config, filepath.Join(examples, "queues.yaml"), filepath.Join(examples, "teams.yaml")); err != nil {
		t.Fatalf("applying the example queues: %v", err)
	}
	return e
}

// startKueue starts the control plane with the workload controllers and
// Kueue with the configuration file config.
func startKueue(t *testing.T, config string) *env {
	t.Helper()
	return startKueueOn(t, config, controlPlaneOptions())
}

// controlPlaneOptions start the control plane with the workload
// controllers, which Kueue's Job integration needs.
func controlPlaneOptions() framework.Options {
	return framework.Options{ControllerManager: true, Workloads: true}
}

// startKueueOn is startKueue on a control plane started with opts.
func startKueueOn(t *testing.T, config string, opts framework.Options) *env {
	t.Helper()
	cp := framework.Start(t, opts)
	cp.StartKueueWith(t, config)
	client, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	return &env{cp: cp, dynamic: client}
}

// startWebhookAndKubelets starts Tessera's webhook, told the shipped
// Kueue configuration's integrations and namespace selector, and the
// goroutine playing the nodes' kubelets.
func (e *env) startWebhookAndKubelets(t *testing.T) {
	t.Helper()
	integrations, namespaces, err := framework.KueueScope(filepath.Join(framework.RepoRoot(), framework.KueueConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	e.cp.StartWebhook(t, func(o *webhookapp.Options) {
		o.Admission.KueueIntegrations, o.Admission.KueueManagedNamespaces = integrations, namespaces
	})
	serveAllocations(t, e.cp)
}

// startExtender runs Tessera's extender in process until the test ends
// and returns its address once it is ready.
func startExtender(t *testing.T, cp *framework.ControlPlane, configure func(*options.Config)) string {
	t.Helper()
	x := runExtender(t, cp, extenderConfig(t, configure), "127.0.0.1:0")
	t.Cleanup(x.stop)
	return x.addr
}

// extenderConfig is the extender's configuration for a test, changed by
// configure unless it is nil.
func extenderConfig(t *testing.T, configure func(*options.Config)) *options.Config {
	t.Helper()
	cfg := options.NewConfig()
	cfg.HeartbeatMaxAge.Duration = time.Hour
	if configure != nil {
		configure(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// extender is one run of Tessera's extender in process.
type extender struct {
	addr string
	// stop ends the run as a scheduler pod's SIGTERM does, and waits
	// for it.
	stop func()
}

// runExtender starts the extender on addr and waits until it is ready.
func runExtender(t *testing.T, cp *framework.ControlPlane, cfg *options.Config, addr string) *extender {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	done := make(chan error, 1)
	go func() { done <- app.Serve(ctx, cfg, cp.Config, app.Listeners{Extender: ln}) }()
	x := &extender{addr: ln.Addr().String()}
	var once sync.Once
	x.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("extender: %v", err)
			}
		})
	}
	framework.WaitReady(t, "the extender", "http://"+x.addr+"/readyz")
	return x
}

// addNode creates a Node whose device plugin advertises 10 shares of each
// of its A100s (81,920 MiB), its GPUNode with the GPUs and a fresh
// heartbeat, and waits until the extender sees it: kube-scheduler does
// not retry a pod on an extender's account.
func (e *env) addNode(ctx context.Context, t *testing.T, name string, gpus int) {
	t.Helper()
	e.addNodeOf(ctx, t, name, gpus, "NVIDIA A100-SXM4-80GB", 81920)
}

// addNodeOf is addNode with GPUs of the model and memory given.
func (e *env) addNodeOf(ctx context.Context, t *testing.T, name string, gpus int, model string, memoryMiB int64) {
	t.Helper()
	names := gpurequest.DefaultResourceNames()
	framework.CreateReadyNode(ctx, t, e.cp.Kube, name, corev1.ResourceList{names.Count: resource.MustParse(strconv.Itoa(10 * gpus))})
	gn, err := e.cp.Tessera.GpuV1alpha1().GPUNodes().Create(ctx, &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating GPUNode %s: %v", name, err)
	}
	for i := range gpus {
		gn.Status.Devices = append(gn.Status.Devices, gpuv1alpha1.GPUDevice{
			UUID: fmt.Sprintf("GPU-%s-%d", name, i), Index: int32(i), Model: model,
			MemoryMiB: memoryMiB, Cores: 100, ShareLimit: 10, Health: gpuv1alpha1.GPUHealthy,
		})
	}
	gn.Status.GPUCount = int32(gpus)
	gn.Status.DriverVersion = "simulated"
	if _, err := e.cp.Tessera.GpuV1alpha1().GPUNodes().UpdateStatus(ctx, gn, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing GPUNode %s status: %v", name, err)
	}
	framework.RenewNodeLease(ctx, t, e.cp.Kube, name, time.Now())
	framework.WaitFor(t, 30*time.Second, "the extender to see node "+name+"'s heartbeat", func() (bool, string) {
		body, err := httpGet("http://" + e.extender + "/metrics/state")
		return err == nil && strings.Contains(body, `tessera_gpunode_heartbeat_timestamp_seconds{node="`+name+`"}`), ""
	})
}

func httpGet(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

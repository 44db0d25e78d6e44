package scheduler

import (
	"context"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/tessera-gpu/tessera/scheduler/app"
	"github.com/tessera-gpu/tessera/scheduler/options"
	"github.com/tessera-gpu/tessera/test/framework"
)

// env is a control plane with kube-scheduler, the extender and a simulated
// device plugin; or, in plugin mode, tessera-scheduler and the device plugin.
type env struct {
	cp       *framework.ControlPlane
	plugin   *devicePlugin
	extender *extenderProcess
	// scheduler is tessera-scheduler in plugin mode, started from
	// schedulerBin with schedulerConfig; nil in extender mode.
	scheduler       *framework.Process
	schedulerBin    string
	schedulerConfig string
}

// restartScheduler stops what places pods (the extender, or
// tessera-scheduler in plugin mode) and starts it again two seconds later.
func (e *env) restartScheduler(t *testing.T) {
	t.Helper()
	if e.scheduler == nil {
		e.extender.stop()
	} else {
		e.scheduler.Stop()
	}
	t.Log("scheduler stopped")
	time.Sleep(2 * time.Second)
	if e.scheduler == nil {
		e.extender.restart(t)
	} else {
		// Not tied to t, a subtest: the control plane stops it when the
		// whole test ends.
		ctx, cancel := context.WithTimeout(t.Context(), framework.SchedulerReadyTimeout)
		defer cancel()
		p, err := e.cp.StartSchedulerBinaryProcess(ctx, e.schedulerBin, e.schedulerConfig)
		if err != nil {
			t.Fatal(err)
		}
		e.scheduler = p
	}
	t.Log("scheduler started again")
}

// startPluginEnv starts a control plane with tessera-scheduler running the
// shipped deploy/scheduler/tessera-scheduler-config.yaml, with the
// heartbeat age, orphan sweep and allocation metrics of startEnv, and the
// device plugin.
func startPluginEnv(t *testing.T) *env {
	t.Helper()
	return startPluginEnvWith(t, framework.Options{ControllerManager: true})
}

// startPluginEnvWith is startPluginEnv on a control plane started with
// opts.
func startPluginEnvWith(t *testing.T, opts framework.Options) *env {
	t.Helper()
	return startPluginEnvEdited(t, opts, nil, serveDelay)
}

// startPluginEnvEdited is startPluginEnvWith with edits made to the
// shipped configuration too (each key's text replaced by its value) and a
// device plugin that takes delay to serve each allocation.
func startPluginEnvEdited(t *testing.T, opts framework.Options, edits map[string]string, delay time.Duration) *env {
	t.Helper()
	bin, err := framework.SchedulerPluginBinary()
	if err != nil {
		t.Fatal(err)
	}
	cp := framework.Start(t, opts)
	e := &env{cp: cp}
	shipped, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "deploy", "scheduler", "tessera-scheduler-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	config := string(shipped)
	edits = maps.Clone(edits)
	if edits == nil {
		edits = map[string]string{}
	}
	edits["heartbeatMaxAge: 2m"] = "heartbeatMaxAge: 1h\n          orphanSweepInterval: 5s"
	// As startEnv's extender, for testMetrics.
	edits["allocationMetrics: false"] = "allocationMetrics: true"
	for from, to := range edits {
		if !strings.Contains(config, from) {
			t.Fatalf("the shipped tessera-scheduler configuration no longer says %q", from)
		}
		config = strings.ReplaceAll(config, from, to)
	}
	e.schedulerBin, e.schedulerConfig = bin, config
	e.scheduler = cp.StartSchedulerBinary(t, bin, config)
	e.plugin = startDevicePlugin(t, cp, delay)
	return e
}

// startEnv starts everything for one test; t.Cleanup stops it.
func startEnv(t *testing.T) *env {
	t.Helper()
	return startEnvWrapped(t, nil)
}

// startEnvWrapped is startEnv with the extender's API requests going
// through wrap's transport, when wrap is set.
func startEnvWrapped(t *testing.T, wrap transport.WrapperFunc) *env {
	t.Helper()
	return startEnvOn(t, framework.Options{ControllerManager: true}, wrap)
}

// startEnvOn is startEnvWrapped on a control plane started with opts,
// the extender's configuration changed by edits.
func startEnvOn(t *testing.T, opts framework.Options, wrap transport.WrapperFunc, edits ...func(*options.Config)) *env {
	t.Helper()
	cp := framework.Start(t, opts)
	e := &env{cp: cp, extender: startExtender(t, cp, wrap, edits...)}
	cp.StartShippedScheduler(t, "http://"+e.extender.addr)
	e.plugin = startDevicePlugin(t, cp, serveDelay)
	return e
}

// startExtender starts an extender with startEnv's configuration changed
// by edits, its API requests going through wrap's transport when wrap is
// set, and waits until it is ready; t.Cleanup stops it.
func startExtender(t *testing.T, cp *framework.ControlPlane, wrap transport.WrapperFunc, edits ...func(*options.Config)) *extenderProcess {
	t.Helper()
	cfg := options.NewConfig()
	cfg.HeartbeatMaxAge.Duration = time.Hour
	cfg.OrphanSweepInterval.Duration = 5 * time.Second
	cfg.AllocationMetrics = true
	for _, edit := range edits {
		edit(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	config := rest.CopyConfig(cp.Config)
	config.Wrap(wrap)
	x := &extenderProcess{t: t, config: config, cfg: cfg, addr: ln.Addr().String()}
	x.start(ln)
	t.Cleanup(x.stop)
	x.waitReady(t)
	return x
}

// extenderProcess is the extender running in process, which can be stopped
// and started again on the same address.
type extenderProcess struct {
	t *testing.T
	// config is the extender's way to the API server.
	config *rest.Config
	cfg    *options.Config
	addr   string

	cancel context.CancelFunc
	done   chan error
}

func (x *extenderProcess) start(ln net.Listener) {
	logger := ktesting.NewLogger(x.t, ktesting.NewConfig(ktesting.Verbosity(2)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	x.cancel = cancel
	x.done = make(chan error, 1)
	go func() { x.done <- app.Serve(ctx, x.cfg, x.config, app.Listeners{Extender: ln}) }()
}

// restart starts a stopped extender again on its address.
func (x *extenderProcess) restart(t *testing.T) {
	t.Helper()
	var ln net.Listener
	var err error
	for range 50 {
		if ln, err = net.Listen("tcp", x.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("listening again on %s: %v", x.addr, err)
	}
	x.start(ln)
	x.waitReady(t)
}

// stop cancels the extender's context and waits until it has closed its
// listener and stopped.
func (x *extenderProcess) stop() {
	if x.cancel == nil {
		return
	}
	x.cancel()
	select {
	case err := <-x.done:
		if err != nil {
			x.t.Errorf("extender: %v", err)
		}
	case <-time.After(time.Minute):
		x.t.Errorf("extender did not stop within a minute")
	}
	x.cancel = nil
}

func (x *extenderProcess) waitReady(t *testing.T) {
	t.Helper()
	framework.WaitFor(t, time.Minute, "the extender to be ready", func() (bool, string) {
		resp, err := httpGet("http://" + x.addr + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		return resp == "ok\n", resp
	})
}

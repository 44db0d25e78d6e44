package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tessera-gpu/tessera/test/framework"
)

// shippedExtenderURL is the extender address in the shipped
// KubeSchedulerConfiguration, replaced by the port the extender got here.
const shippedExtenderURL = "http://127.0.0.1:8888"

// What schedules (--scheduler).
const (
	// schedulerExtender is kube-scheduler calling Tessera's extender
	// (extender mode).
	schedulerExtender = "extender"
	// schedulerPlugin is tessera-scheduler: with the Tessera plugin in
	// extender mode, with DynamicResources and the TesseraDRA score in DRA
	// mode.
	schedulerPlugin = "plugin"
	// schedulerStock is stock kube-scheduler alone (DRA mode).
	schedulerStock = "stock"
)

// stockSchedulerConfig is kube-scheduler's default configuration: the
// cluster's own default-scheduler, and in DRA mode with --scheduler=stock
// the scheduler whose DynamicResources plugin allocates the claims.
const stockSchedulerConfig = `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
`

// startScheduler starts the scheduler of the chosen mode, and beside it
// the cluster's own kube-scheduler, which places the pods that keep
// spec.schedulerName default-scheduler: every pod the webhook does not
// hand to tessera-scheduler, as in a real cluster.
func (c *cluster) startScheduler(ctx context.Context) error {
	start := c.startExtender
	if c.o.scheduler == schedulerPlugin {
		start = c.startPluginScheduler
	}
	if err := start(ctx); err != nil {
		return err
	}
	return c.startStockScheduler(ctx)
}

// startStockScheduler starts kube-scheduler with its default
// configuration, and waits a minute at most for it to become ready.
func (c *cluster) startStockScheduler(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	p, err := c.cp.StartSchedulerProcess(ctx, stockSchedulerConfig)
	if err != nil {
		return err
	}
	c.daemons = append(c.daemons, p)
	return nil
}

// startPluginScheduler starts tessera-scheduler, kube-scheduler with the
// Tessera plugin, with the shipped deploy/scheduler/tessera-scheduler-config.yaml.
func (c *cluster) startPluginScheduler(ctx context.Context) error {
	p, err := c.startTesseraScheduler(ctx, "tessera-scheduler-config.yaml")
	if err != nil {
		return err
	}
	if p.MetricsAddress != "" {
		c.metrics = append(c.metrics, endpoint{"tessera-scheduler", "http://" + p.MetricsAddress + "/metrics"},
			endpoint{"tessera-scheduler GPU state", "http://" + p.MetricsAddress + "/metrics/state"})
	}
	return nil
}

// startTesseraScheduler starts tessera-scheduler with the shipped
// configuration deploy/scheduler/<config>, and waits a minute at most
// for it to become ready.
func (c *cluster) startTesseraScheduler(ctx context.Context, config string) (*framework.Process, error) {
	bin, err := framework.SchedulerPluginBinary()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join("deploy", "scheduler", config))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	p, err := c.cp.StartSchedulerBinaryProcess(ctx, bin, string(data))
	if err != nil {
		return nil, err
	}
	c.daemons = append(c.daemons, p)
	return p, nil
}

// startExtender starts the scheduler extender and kube-scheduler calling it.
func (c *cluster) startExtender(ctx context.Context) error {
	port, err := framework.FreePort()
	if err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	p, err := c.daemon("scheduler-extender", "scheduler", "--kubeconfig", c.cp.KubeconfigPath, "--listen-address", addr,
		// Metrics are scraped from addr; no second listener on every address.
		"--metrics-address=",
		// With Kueue, the gang-fit check (deploy/examples/kueue/gang-fit.yaml).
		fmt.Sprintf("--gang-fit=%t", c.o.kueue))
	if err != nil {
		return err
	}
	if err := p.WaitOK(ctx, "http://"+addr+"/readyz", time.Minute); err != nil {
		return fmt.Errorf("the scheduler extender did not become ready (see %s): %w",
			filepath.Join(c.o.stateDir, "scheduler-extender.log"), err)
	}
	c.metrics = append(c.metrics, endpoint{"scheduler extender", "http://" + addr + "/metrics"},
		endpoint{"extender GPU state", "http://" + addr + "/metrics/state"})

	config, err := os.ReadFile(filepath.Join("deploy", "scheduler", "kube-scheduler-config.yaml"))
	if err != nil {
		return err
	}
	if !strings.Contains(string(config), shippedExtenderURL) {
		return fmt.Errorf("deploy/scheduler/kube-scheduler-config.yaml does not name the extender at %s", shippedExtenderURL)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	sched, err := c.cp.StartSchedulerProcess(ctx, strings.ReplaceAll(string(config), shippedExtenderURL, "http://"+addr))
	if err != nil {
		return err
	}
	c.daemons = append(c.daemons, sched)
	return nil
}

package harness

import (
	"context"
	"fmt"
	"path/filepath"

	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
	"github.com/tessera-gpu/tessera/test/framework"
)

// NewRunner loads and builds what the mode that o asks for needs: the
// extender rows' scheduler configuration, Tessera's extender,
// tessera-scheduler for row d, and the CPUs of each side when the control
// plane is pinned. base holds one directory per row.
func NewRunner(ctx context.Context, o *Options, base string) (*Runner, error) {
	logger := klog.FromContext(ctx)
	configPath := o.SchedulerConfig
	if !filepath.IsAbs(configPath) {
		configPath = filepath.Join(framework.RepoRoot(), configPath)
	}
	config, err := LoadExtenderConfig(configPath)
	if err != nil {
		return nil, err
	}
	logger.Info("Scheduler configuration for the extender rows", "source", config.Source, "schedulerName", config.SchedulerName)
	r := &Runner{Options: o, Base: base, ExtenderConfig: config, ExtenderBin: o.ExtenderBin}
	if r.ExtenderBin == "" && !o.ScaleDRA() && (o.Mode == ModeScale || o.Wants(RowTessera) || o.Wants(RowFitGate)) {
		if r.ExtenderBin, err = BuildExtender(ctx, base); err != nil {
			return nil, err
		}
	}
	if !o.runsKubeScheduler() {
		return r, nil
	}
	if o.Wants(RowPlugin) {
		if r.SchedulerBin, r.PluginConfig, err = pluginScheduler(o, config.SchedulerName); err != nil {
			return nil, err
		}
		logger.Info("tessera-scheduler for row d", "binary", r.SchedulerBin, "config", r.PluginConfig.Source)
	}
	if o.Wants(RowDRA) && o.DRAConfig != "" {
		if r.SchedulerBin, r.DRAConfig, err = draScheduler(o, config.SchedulerName); err != nil {
			return nil, err
		}
		logger.Info("tessera-scheduler for row e", "binary", r.SchedulerBin, "config", r.DRAConfig.Source)
	}
	if o.PinControlPlane {
		if r.Pin, err = NewPinning(); err != nil {
			return nil, err
		}
		if err := r.Pin.PinBench(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// pluginScheduler finds tessera-scheduler and its configuration for row d.
func pluginScheduler(o *Options, schedulerName string) (string, SchedulerConfig, error) {
	bin, err := schedulerBinary(o)
	if err != nil {
		return "", SchedulerConfig{}, err
	}
	config, err := LoadPluginConfig(repoPath(o.PluginConfig), schedulerName)
	return bin, config, err
}

// draScheduler finds tessera-scheduler and its configuration for row e.
func draScheduler(o *Options, schedulerName string) (string, SchedulerConfig, error) {
	bin, err := schedulerBinary(o)
	if err != nil {
		return "", SchedulerConfig{}, err
	}
	config, err := LoadDRAConfig(repoPath(o.DRAConfig), schedulerName)
	return bin, config, err
}

// schedulerBinary is --scheduler-bin, or else tessera-scheduler built
// from this checkout.
func schedulerBinary(o *Options) (string, error) {
	if o.SchedulerBin != "" {
		return o.SchedulerBin, nil
	}
	return framework.SchedulerPluginBinary()
}

// repoPath is path, relative to the repository root unless absolute.
func repoPath(path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(framework.RepoRoot(), path)
}

// Where says which CPUs the control plane and the rest ran on, for a
// table's title.
func (r *Runner) Where() string {
	if r.Pin != nil {
		return r.Pin.String()
	}
	return fmt.Sprintf("%d CPUs shared by every process", meter.NumCPU())
}

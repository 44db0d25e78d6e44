package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
	"github.com/tessera-gpu/tessera/internal/kubeclient"
	"github.com/tessera-gpu/tessera/test/framework"
)

// RowScheduler is what schedules a row: kube-scheduler or
// tessera-scheduler with the row's configuration, and the extender it
// calls, if any.
type RowScheduler struct {
	// Config is the KubeSchedulerConfiguration, its extender's URL set.
	Config SchedulerConfig
	// bin is tessera-scheduler's binary; empty for stock kube-scheduler.
	bin string
	// Name is the scheduler's program name, for messages.
	Name string
	// Noop and extender are the row's extender, at most one of them.
	Noop     *noopExtender
	Extender *ExtenderProcess
	// Proc is the scheduler's process once started.
	Proc *framework.Process
}

// PrepareScheduler starts the row's extender, if it has one, and decides
// the scheduler's configuration; start starts the scheduler. The caller
// stops the extender with stopExtender; the control plane stops the
// scheduler.
func (r *Runner) PrepareScheduler(ctx context.Context, env *ClusterEnv, row string) (*RowScheduler, error) {
	logger := klog.FromContext(ctx)
	config, err := r.ExtenderConfig.withoutExtenders()
	if err != nil {
		return nil, err
	}
	s := &RowScheduler{Config: config, Name: "kube-scheduler"}
	switch row {
	case RowNoop:
		// Bindings go in protobuf, as Tessera's extender sends them.
		kube, err := kubeclient.New(env.extenderConfig)
		if err != nil {
			return nil, err
		}
		if s.Noop, err = newNoopExtender(kube); err != nil {
			return nil, err
		}
		url, err := s.Noop.serve(ctx)
		if err != nil {
			return nil, err
		}
		if s.Config, err = r.ExtenderConfig.WithExtenderURL(url); err != nil {
			return nil, err
		}
	case RowTessera, RowFitGate:
		started := time.Now()
		flags := r.Options.ExtenderFlags()
		if row == RowFitGate {
			flags = append(flags, "--fit-gate")
		}
		if s.Extender, err = StartExtender(ctx, r.ExtenderBin, env.ExtenderKubeconfig, r.ExtenderConfig.SchedulerName, env.Dir, flags, r.Options.ExtenderEnv); err != nil {
			return nil, err
		}
		logger.Info("Extender ready", "after", time.Since(started).Round(time.Millisecond))
		if s.Config, err = r.ExtenderConfig.WithExtenderURL(s.Extender.URL); err != nil {
			s.Extender.Stop()
			return nil, err
		}
	case RowPlugin:
		s.Config, s.bin, s.Name = r.PluginConfig, r.SchedulerBin, filepath.Base(r.SchedulerBin)
	case RowDRA:
		if r.DRAConfig.YAML != "" {
			s.Config, s.bin, s.Name = r.DRAConfig, r.SchedulerBin, filepath.Base(r.SchedulerBin)
		}
	}
	return s, nil
}

// readyMax bounds the wait for a scheduler or the extender to become
// ready: to list and take in a cluster of thousands of nodes and hundreds
// of thousands of pods, which takes minutes on a loaded 2-CPU machine.
const readyMax = 10 * time.Minute

// Start runs the scheduler on the control plane and waits until it is
// ready.
func (s *RowScheduler) Start(ctx context.Context, env *ClusterEnv) error {
	logger := klog.FromContext(ctx)
	logger.Info("Starting the scheduler", "scheduler", s.Name, "config", s.Config.Source, "load", meter.LoadAverage())
	started := time.Now()
	readyCtx, cancel := context.WithTimeout(ctx, readyMax)
	defer cancel()
	var err error
	if s.bin == "" {
		s.Proc, err = env.ControlPlane.StartSchedulerProcess(readyCtx, s.Config.YAML)
	} else {
		s.Proc, err = env.ControlPlane.StartSchedulerBinaryProcess(readyCtx, s.bin, s.Config.YAML)
	}
	if err == nil {
		logger.Info("Scheduler ready", "scheduler", s.Name, "after", time.Since(started).Round(time.Millisecond))
	}
	return err
}

// Check reports the scheduler or the extender gone.
func (s *RowScheduler) Check() error {
	if exited, err := s.Proc.Exited(); exited {
		return fmt.Errorf("%s exited: %v", s.Name, err)
	}
	if s.Extender != nil {
		if exited, err := s.Extender.Exited(); exited {
			return fmt.Errorf("the extender exited: %v; see %s", err, s.Extender.logFile)
		}
	}
	return nil
}

// StopExtender stops Tessera's extender, if the row runs one.
func (s *RowScheduler) StopExtender() {
	if s.Extender != nil {
		s.Extender.Stop()
	}
}

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/internal/kubeclient"
	"github.com/tessera-gpu/tessera/test/framework"
)

// rowScheduler is what schedules a row: kube-scheduler or
// tessera-scheduler with the row's configuration, and the extender it
// calls, if any.
type rowScheduler struct {
	// config is the KubeSchedulerConfiguration, its extender's URL set.
	config schedulerConfig
	// bin is tessera-scheduler's binary; empty for stock kube-scheduler.
	bin string
	// name is the scheduler's program name, for messages.
	name string
	// noop and extender are the row's extender, at most one of them.
	noop     *noopExtender
	extender *extenderProcess
	// proc is the scheduler's process once started.
	proc *framework.Process
}

// prepareScheduler starts the row's extender, if it has one, and decides
// the scheduler's configuration; start starts the scheduler. The caller
// stops the extender with stopExtender; the control plane stops the
// scheduler.
func (r *runner) prepareScheduler(ctx context.Context, env *clusterEnv, row string) (*rowScheduler, error) {
	logger := klog.FromContext(ctx)
	config, err := r.extenderConfig.withoutExtenders()
	if err != nil {
		return nil, err
	}
	s := &rowScheduler{config: config, name: "kube-scheduler"}
	switch row {
	case rowNoop:
		// Bindings go in protobuf, as Tessera's extender sends them.
		kube, err := kubeclient.New(env.extenderConfig)
		if err != nil {
			return nil, err
		}
		if s.noop, err = newNoopExtender(kube); err != nil {
			return nil, err
		}
		url, err := s.noop.serve(ctx)
		if err != nil {
			return nil, err
		}
		if s.config, err = r.extenderConfig.withExtenderURL(url); err != nil {
			return nil, err
		}
	case rowTessera:
		started := time.Now()
		if s.extender, err = startExtender(ctx, r.extenderBin, env.extenderKubeconfig, r.extenderConfig.SchedulerName, env.dir, r.o.extenderArgs(), r.o.ExtenderEnv); err != nil {
			return nil, err
		}
		logger.Info("Extender ready", "after", time.Since(started).Round(time.Millisecond))
		if s.config, err = r.extenderConfig.withExtenderURL(s.extender.url); err != nil {
			s.extender.Stop()
			return nil, err
		}
	case rowPlugin:
		s.config, s.bin, s.name = r.pluginConfig, r.schedulerBin, filepath.Base(r.schedulerBin)
	}
	return s, nil
}

// readyMax bounds the wait for a scheduler or the extender to become
// ready: to list and take in a cluster of thousands of nodes and hundreds
// of thousands of pods, which takes minutes on a loaded 2-CPU machine.
const readyMax = 10 * time.Minute

// start runs the scheduler on the control plane and waits until it is
// ready.
func (s *rowScheduler) start(ctx context.Context, env *clusterEnv) error {
	logger := klog.FromContext(ctx)
	logger.Info("Starting the scheduler", "scheduler", s.name, "config", s.config.Source, "load", loadAverage())
	started := time.Now()
	readyCtx, cancel := context.WithTimeout(ctx, readyMax)
	defer cancel()
	var err error
	if s.bin == "" {
		s.proc, err = env.cp.StartSchedulerProcess(readyCtx, s.config.YAML)
	} else {
		s.proc, err = env.cp.StartSchedulerBinaryProcess(readyCtx, s.bin, s.config.YAML)
	}
	if err == nil {
		logger.Info("Scheduler ready", "scheduler", s.name, "after", time.Since(started).Round(time.Millisecond))
	}
	return err
}

// check reports the scheduler or the extender gone.
func (s *rowScheduler) check() error {
	if exited, err := s.proc.Exited(); exited {
		return fmt.Errorf("%s exited: %v", s.name, err)
	}
	if s.extender != nil {
		if exited, err := s.extender.Exited(); exited {
			return fmt.Errorf("the extender exited: %v; see %s", err, s.extender.logFile)
		}
	}
	return nil
}

// stopExtender stops Tessera's extender, if the row runs one.
func (s *rowScheduler) stopExtender() {
	if s.extender != nil {
		s.extender.Stop()
	}
}

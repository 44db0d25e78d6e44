package app

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"

	"github.com/tessera-gpu/tessera/scheduler/extender"
	"github.com/tessera-gpu/tessera/scheduler/gatelift"
	"github.com/tessera-gpu/tessera/scheduler/metrics"
	"github.com/tessera-gpu/tessera/scheduler/options"
	"github.com/tessera-gpu/tessera/scheduler/podrequest"
	"github.com/tessera-gpu/tessera/scheduler/requeue"
	"github.com/tessera-gpu/tessera/scheduler/tracker"
	"github.com/tessera-gpu/tessera/scheduler/viewsync"
)

// requeueWindow is how long after turning a pod away the extender still
// pokes it when GPUs are freed: far longer than its informers lag behind
// kube-scheduler's.
const requeueWindow = 30 * time.Second

// server is the running extender's parts.
type server struct {
	// mux serves the extender's verbs and the operational endpoints.
	mux *http.ServeMux
	// operational serves only /healthz, /readyz, /metrics and
	// /metrics/state, on the metrics listener.
	operational *http.ServeMux
	keeper      *viewsync.Keeper
	events      events.EventBroadcaster
	wg          sync.WaitGroup
}

// newServer builds the extender over the view that viewsync keeps, and
// starts the informers, the tracker and the requeuer; they run until ctx
// ends.
func newServer(ctx context.Context, cfg *options.Config, restConfig *rest.Config) (*server, error) {
	restConfig = rest.CopyConfig(restConfig)
	restConfig.QPS = cfg.ClientQPS
	restConfig.Burst = int(cfg.ClientBurst)
	keeper, err := viewsync.New(viewsync.Config{
		Options:       cfg,
		RestConfig:    restConfig,
		SchedulerName: cfg.SchedulerName,
		FieldManager:  extender.FieldManager,
	})
	if err != nil {
		return nil, err
	}
	s := &server{
		mux:         http.NewServeMux(),
		operational: http.NewServeMux(),
		keeper:      keeper,
		events:      events.NewBroadcaster(&events.EventSinkImpl{Interface: keeper.Kube.EventsV1()}),
	}
	registry, err := keeper.NewRegistry("extender")
	if err != nil {
		return nil, err
	}
	requests, err := metrics.NewRequests(registry)
	if err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	requeuer := requeue.New(keeper.Kube, keeper.Clock, requeueWindow, extender.FieldManager)
	recorder := s.events.NewRecorder(scheme.Scheme, extender.FieldManager)
	var frees tracker.Requeue = requeuer
	var lifter *gatelift.Lifter
	if cfg.FitGate.Enabled {
		lifter, err = gatelift.New(gatelift.Config{
			Kube:           keeper.Kube,
			Pods:           keeper.Pods,
			View:           keeper.View,
			Rules:          keeper.Rules(),
			Parser:         podrequest.Parser{ResourceNames: cfg.ResourceNames, DefaultNodePolicy: cfg.DefaultNodePolicy, DefaultGPUPolicy: cfg.DefaultGPUPolicy},
			Profile:        cfg.SchedulerName,
			Recorder:       recorder,
			FieldManager:   extender.FieldManager,
			Clock:          keeper.Clock,
			Ready:          keeper.HasSynced,
			LeaseNamespace: cfg.FitGate.LeaseNamespace,
			LeaseName:      cfg.FitGate.LeaseName,
			Registry:       registry,
		})
		if err != nil {
			return nil, err
		}
		frees = viewsync.FanOut{requeuer, lifter}
	}
	if err := keeper.Start(ctx, frees); err != nil {
		return nil, err
	}
	if err := s.events.StartRecordingToSinkWithContext(ctx); err != nil {
		return nil, fmt.Errorf("starting event recording: %w", err)
	}
	ext := extender.New(extender.Config{
		View:              keeper.View,
		Gate:              keeper.Gate,
		Clock:             keeper.Clock,
		Kube:              keeper.Kube,
		Tessera:           keeper.Tessera,
		Pods:              keeper.Pods.Lister(),
		Recorder:          recorder,
		Metrics:           requests,
		Requeue:           requeuer,
		QuotaRequeue:      requeuer,
		FitGate:           fitGate(lifter),
		Quotas:            keeper.Quotas,
		ResourceNames:     cfg.ResourceNames,
		DefaultNodePolicy: cfg.DefaultNodePolicy,
		DefaultGPUPolicy:  cfg.DefaultGPUPolicy,
		HeartbeatMaxAge:   cfg.HeartbeatMaxAge.Duration,
		BindWaitTimeout:   cfg.BindWaitTimeout.Duration,
		HAMiCoreMissing:   cfg.HAMiCoreMissing,
		Ready:             keeper.HasSynced,
	})
	ext.Register(s.mux)
	registryHandler := metrics.RegistryHandler(registry)
	keeper.AddEndpoints(s.mux, registryHandler)
	keeper.AddEndpoints(s.operational, registryHandler)
	if cfg.EnableProfiling {
		addProfiling(s.mux)
	}
	s.wg.Go(func() { requeuer.Run(ctx) })
	if lifter != nil {
		s.wg.Go(func() { lifter.Run(ctx) })
	}
	return s, nil
}

// stop waits for the informers, the tracker and the requeuer, whose
// context has ended.
func (s *server) stop() {
	s.keeper.Stop()
	s.wg.Wait()
	s.events.Shutdown()
}

// fitGate is the lifter as the extender hears of it: nil, not a nil
// *Lifter, when the fit gate is off.
func fitGate(lifter *gatelift.Lifter) extender.FitGate {
	if lifter == nil {
		return nil
	}
	return lifter
}

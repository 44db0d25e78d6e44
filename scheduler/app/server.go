package app

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
	"github.com/tessera-gpu/tessera/generated/informers/externalversions"
	"github.com/tessera-gpu/tessera/internal/kubeclient"
	"github.com/tessera-gpu/tessera/internal/version"
	"github.com/tessera-gpu/tessera/scheduler/extender"
	"github.com/tessera-gpu/tessera/scheduler/freememory"
	"github.com/tessera-gpu/tessera/scheduler/inflight"
	"github.com/tessera-gpu/tessera/scheduler/liveness"
	"github.com/tessera-gpu/tessera/scheduler/metrics"
	"github.com/tessera-gpu/tessera/scheduler/options"
	"github.com/tessera-gpu/tessera/scheduler/requeue"
	"github.com/tessera-gpu/tessera/scheduler/tracker"
	"github.com/tessera-gpu/tessera/scheduler/view"
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
	metrics     http.Handler
	// stateMetrics serves the per-GPU and per-node series.
	stateMetrics http.Handler
	tracker      *tracker.Tracker
	events       events.EventBroadcaster
	wg           sync.WaitGroup
	kube         informers.SharedInformerFactory
	tessera      externalversions.SharedInformerFactory
	// leases watches the namespace of the nodes' Leases only.
	leases informers.SharedInformerFactory
	marker *liveness.Marker
}

// newServer builds the extender and starts its informers and tracker; they
// run until ctx ends.
func newServer(ctx context.Context, cfg *options.Config, restConfig *rest.Config) (*server, error) {
	clk := clock.RealClock{}
	restConfig = kubeclient.WaitForRestarts(restConfig, clk)
	restConfig.QPS = cfg.ClientQPS
	restConfig.Burst = int(cfg.ClientBurst)
	restConfig.UserAgent = extender.FieldManager
	kube, err := kubeclient.New(restConfig)
	if err != nil {
		return nil, fmt.Errorf("creating Kubernetes client: %w", err)
	}
	tessera, err := versioned.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("creating Tessera client: %w", err)
	}

	trim := tracker.Trim(cfg.ResourceNames)
	s := &server{
		mux:         http.NewServeMux(),
		operational: http.NewServeMux(),
		// Only the pods of the extender's profile can hold allocations.
		kube: informers.NewSharedInformerFactoryWithOptions(kube, 0,
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("spec.schedulerName", cfg.SchedulerName).String()
			}),
			informers.WithTransform(trim)),
		tessera: externalversions.NewSharedInformerFactoryWithOptions(tessera, 0, externalversions.WithTransform(trim)),
		leases: informers.NewSharedInformerFactoryWithOptions(kube, 0,
			informers.WithNamespace(cfg.LeaseNamespace), informers.WithTransform(trim)),
		events: events.NewBroadcaster(&events.EventSinkImpl{Interface: kube.EventsV1()}),
	}
	v := view.New()
	// The tracker and the marker age the nodes' Leases alike.
	renewals := liveness.NewRenewals(clk)
	gate := inflight.NewGate(clk, cfg.InFlightTTL.Duration, inflight.DefaultVerifyAfter, tracker.NewTurnVerifier(v, kube, tessera))
	requeuer := requeue.New(kube, clk, requeueWindow, extender.FieldManager)
	pods := s.kube.Core().V1().Pods()
	s.tracker, err = tracker.New(ctx, tracker.Config{
		View:              v,
		Gate:              gate,
		Clock:             clk,
		Kube:              kube,
		Tessera:           tessera,
		Pods:              pods,
		GPUNodes:          s.tessera.Gpu().V1alpha1().GPUNodes(),
		Allocations:       s.tessera.Gpu().V1alpha1().GPUAllocations(),
		Leases:            s.leases.Coordination().V1().Leases(),
		Renewals:          renewals,
		Requeue:           requeuer,
		HeartbeatMaxAge:   cfg.HeartbeatMaxAge.Duration,
		SweepInterval:     cfg.OrphanSweepInterval.Duration,
		ReservationMaxAge: 2*cfg.BindWaitTimeout.Duration + cfg.InFlightTTL.Duration,
	})
	if err != nil {
		return nil, err
	}

	s.marker, err = liveness.New(ctx, liveness.Config{
		Tessera:      tessera,
		FieldManager: liveness.FieldManager,
		GPUNodes:     s.tessera.Gpu().V1alpha1().GPUNodes(),
		Leases:       s.leases.Coordination().V1().Leases(),
		Namespace:    cfg.LeaseNamespace,
		Renewals:     renewals,
		Clock:        clk,
		MaxAge:       cfg.HeartbeatMaxAge.Duration,
	})
	if err != nil {
		return nil, err
	}

	registry := prometheus.NewRegistry()
	requests, err := metrics.NewRequests(registry)
	if err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		version.NewCollector("extender"),
	} {
		if err := registry.Register(c); err != nil {
			return nil, fmt.Errorf("registering metrics: %w", err)
		}
	}

	if err := s.events.StartRecordingToSinkWithContext(ctx); err != nil {
		return nil, fmt.Errorf("starting event recording: %w", err)
	}
	ext := extender.New(extender.Config{
		View:              v,
		Gate:              gate,
		Clock:             clk,
		Kube:              kube,
		Tessera:           tessera,
		Pods:              pods.Lister(),
		Recorder:          s.events.NewRecorder(scheme.Scheme, extender.FieldManager),
		Metrics:           requests,
		Requeue:           requeuer,
		ResourceNames:     cfg.ResourceNames,
		DefaultNodePolicy: cfg.DefaultNodePolicy,
		DefaultGPUPolicy:  cfg.DefaultGPUPolicy,
		HeartbeatMaxAge:   cfg.HeartbeatMaxAge.Duration,
		BindWaitTimeout:   cfg.BindWaitTimeout.Duration,
		HAMiCoreMissing:   cfg.HAMiCoreMissing,
		Ready:             s.tracker.HasSynced,
	})
	ext.Register(s.mux)
	s.metrics = metrics.RegistryHandler(registry)
	s.stateMetrics = metrics.NewState(v, metrics.StateOptions{Allocations: cfg.AllocationMetrics}).Handler()
	s.addOperationalEndpoints(s.mux)
	s.addOperationalEndpoints(s.operational)
	if cfg.EnableProfiling {
		addProfiling(s.mux)
	}

	free := freememory.New(v, s.tessera.Gpu().V1alpha1().GPUNodes().Lister(), tessera, clk, s.tracker.HasSynced, extender.FieldManager)

	s.kube.Start(ctx.Done())
	s.tessera.Start(ctx.Done())
	s.leases.Start(ctx.Done())
	s.wg.Add(4)
	go func() {
		defer s.wg.Done()
		s.tracker.Run(ctx)
	}()
	go func() {
		defer s.wg.Done()
		s.marker.Run(ctx)
	}()
	go func() {
		defer s.wg.Done()
		requeuer.Run(ctx)
	}()
	go func() {
		defer s.wg.Done()
		free.Run(ctx)
	}()
	return s, nil
}

// stop waits for the informers and tracker, whose context has ended.
func (s *server) stop() {
	s.kube.Shutdown()
	s.tessera.Shutdown()
	s.leases.Shutdown()
	s.wg.Wait()
	s.events.Shutdown()
}

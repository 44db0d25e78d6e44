package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
	"github.com/tessera-gpu/tessera/generated/informers/externalversions"
	"github.com/tessera-gpu/tessera/internal/httpserver"
	"github.com/tessera-gpu/tessera/internal/version"
	"github.com/tessera-gpu/tessera/webhook/admission"
	"github.com/tessera-gpu/tessera/webhook/certs"
	"github.com/tessera-gpu/tessera/webhook/draclaims"
)

// Dependencies are what the server talks to. Kube and Tessera are
// required; the rest default.
type Dependencies struct {
	Kube    kubernetes.Interface
	Tessera versioned.Interface
	// Clock drives certificate reloads and renewals; nil: the real clock.
	Clock clock.WithTicker
	// Listener, when set, is used instead of listening on
	// Options.ListenAddress, so a test can pick a free port first.
	Listener net.Listener
}

// Server is the admission webhook daemon.
type Server struct {
	opts     *Options
	deps     Dependencies
	registry *prometheus.Registry
	mux      *http.ServeMux
	tls      certs.Source
	// runCerts keeps the certificate fresh until ctx ends.
	runCerts func(ctx context.Context)
	// certsReady reports an error until the certificate can be trusted.
	certsReady func() error

	kubeInformers informers.SharedInformerFactory
	gpuInformers  externalversions.SharedInformerFactory
	// templateInformers watch only the webhook's own ResourceClaimTemplates.
	templateInformers informers.SharedInformerFactory
	informersSynced   []cache.InformerSynced
	synced            atomic.Bool
}

// NewServer checks the options and builds the server; a certificate file
// that cannot be read fails here.
func NewServer(opts *Options, deps Dependencies) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if deps.Kube == nil || deps.Tessera == nil {
		return nil, errors.New("the Kubernetes and Tessera clients are required")
	}
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	s := &Server{opts: opts, deps: deps, registry: prometheus.NewRegistry(), mux: http.NewServeMux()}

	s.kubeInformers = informers.NewSharedInformerFactoryWithOptions(deps.Kube, 0,
		informers.WithTransform(stripManagedFields))
	s.gpuInformers = externalversions.NewSharedInformerFactoryWithOptions(deps.Tessera, 0,
		externalversions.WithTransform(stripManagedFields))
	s.templateInformers = informers.NewSharedInformerFactoryWithOptions(deps.Kube, 0,
		informers.WithTransform(stripManagedFields),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = draclaims.TemplateSelector() }))
	namespaces := s.kubeInformers.Core().V1().Namespaces()
	gpuNodes := s.gpuInformers.Gpu().V1alpha1().GPUNodes()
	// A namespace may choose DRA mode with its label whatever the
	// webhook's mode, so the templates are always watched.
	templates := s.templateInformers.Resource().V1().ResourceClaimTemplates()
	// The GPU quota's message reads what the namespaces use from here.
	quotas := s.kubeInformers.Core().V1().ResourceQuotas()
	s.informersSynced = []cache.InformerSynced{namespaces.Informer().HasSynced, gpuNodes.Informer().HasSynced,
		templates.Informer().HasSynced, quotas.Informer().HasSynced}
	admitter, err := admission.NewAdmitter(opts.Admission, namespaces.Lister(), gpuNodes.Lister(), quotas.Lister(),
		draclaims.NewClaimTemplates(deps.Kube, templates.Lister()), &podGroupDiscovery{discovery: deps.Kube.Discovery(), clock: deps.Clock})
	if err != nil {
		return nil, err
	}

	if err := s.setUpTLS(); err != nil {
		return nil, err
	}
	metrics, err := admission.NewMetrics(s.registry)
	if err != nil {
		return nil, err
	}
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		certs.NewExpiryCollector(s.tls),
		version.NewCollector("webhook"),
	} {
		if err := s.registry.Register(c); err != nil {
			return nil, fmt.Errorf("registering metrics: %w", err)
		}
	}

	s.mux.Handle("/mutate", admission.NewHandler(admission.WebhookMutate, admitter.Mutate, opts.MaxRequestBytes, metrics, deps.Clock))
	s.mux.Handle("/validate", admission.NewHandler(admission.WebhookValidate, admitter.Validate, opts.MaxRequestBytes, metrics, deps.Clock))
	s.addOperationalEndpoints(s.mux)
	return s, nil
}

func (s *Server) setUpTLS() error {
	switch s.opts.TLSMode {
	case TLSModeFiles:
		src, err := certs.NewFileSource(s.opts.CertFile, s.opts.KeyFile, s.opts.ReloadInterval, s.deps.Clock)
		if err != nil {
			return fmt.Errorf("loading the serving certificate: %w", err)
		}
		s.tls, s.runCerts, s.certsReady = src, src.Run, func() error { return nil }
	case TLSModeSelfManaged:
		cfg, err := s.opts.selfManagedConfig()
		if err != nil {
			return err
		}
		src, err := certs.NewSelfManaged(cfg, s.deps.Kube, s.deps.Clock)
		if err != nil {
			return err
		}
		s.tls, s.runCerts, s.certsReady = src, src.Run, src.Ready
	}
	return nil
}

// Run serves until ctx ends, then lets in-flight reviews finish within the
// shutdown timeout.
func (s *Server) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithCancel(ctx)

	s.kubeInformers.Start(ctx.Done())
	s.gpuInformers.Start(ctx.Done())
	s.templateInformers.Start(ctx.Done())
	defer s.kubeInformers.Shutdown()
	defer s.gpuInformers.Shutdown()
	defer s.templateInformers.Shutdown()
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), s.informersSynced...) {
			s.synced.Store(true)
			logger.Info("Informers synced")
		}
	}()
	certsDone := make(chan struct{})
	go func() { defer close(certsDone); s.runCerts(ctx) }()
	// Stop the informers and the certificate loop, then wait for the loop.
	defer func() { <-certsDone }()
	defer cancel()

	ln := s.deps.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.opts.ListenAddress); err != nil {
			return fmt.Errorf("listening on %s: %w", s.opts.ListenAddress, err)
		}
	}
	// Reviews in flight at shutdown may finish: the API server is waiting.
	base := context.WithoutCancel(ctx)
	secure := httpserver.New(base, s.mux, httpserver.DefaultTimeouts())
	secure.TLSConfig = httpserver.TLSConfig(s.tls.GetCertificate)
	servers := []httpserver.Listener{{Server: secure, Listener: ln}}
	logger.Info("Serving admission webhooks", "address", ln.Addr().String(), "tlsMode", s.opts.TLSMode)

	if s.opts.MetricsAddress != "" {
		metricsLn, err := net.Listen("tcp", s.opts.MetricsAddress)
		if err != nil {
			ln.Close()
			return fmt.Errorf("listening on the metrics address %s: %w", s.opts.MetricsAddress, err)
		}
		plain := http.NewServeMux()
		s.addOperationalEndpoints(plain)
		servers = append(servers, httpserver.Listener{Server: httpserver.New(base, plain, httpserver.DefaultTimeouts()), Listener: metricsLn})
		logger.Info("Serving metrics over plain HTTP", "address", metricsLn.Addr().String())
	}
	return httpserver.Serve(ctx, s.opts.ShutdownTimeout, servers...)
}

// stripManagedFields drops what the webhook never reads from cached objects.
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

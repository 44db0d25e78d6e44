package app

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/tessera-gpu/tessera/webhook/admission"
	"github.com/tessera-gpu/tessera/webhook/certs"
)

// TLS modes.
const (
	// TLSModeFiles serves a certificate and key from files, reloaded when
	// they change; something else (cert-manager, an administrator) keeps
	// the configurations' caBundle.
	TLSModeFiles = "files"
	// TLSModeSelfManaged makes and renews its own authority and
	// certificate, kept in a Secret, and writes the caBundle itself.
	TLSModeSelfManaged = "self-managed"
)

// Options configure the webhook daemon.
type Options struct {
	// ListenAddress is the HTTPS address of every endpoint.
	ListenAddress string
	// MetricsAddress, when set, also serves /metrics, /healthz and /readyz
	// over plain HTTP, for scrapers that do not speak TLS.
	MetricsAddress string
	// Kubeconfig is a kubeconfig file; empty means in-cluster.
	Kubeconfig string
	// MaxRequestBytes bounds an AdmissionReview body.
	MaxRequestBytes int64
	// ShutdownTimeout is how long in-flight reviews may finish on stop.
	ShutdownTimeout time.Duration

	// TLSMode is TLSModeFiles or TLSModeSelfManaged.
	TLSMode string
	// CertFile and KeyFile are read in TLSModeFiles, every ReloadInterval.
	CertFile, KeyFile string
	ReloadInterval    time.Duration
	// Namespace, ServiceName, SecretName, ExtraDNSNames and IPAddresses
	// are for TLSModeSelfManaged: the certificate covers the Service's DNS
	// names, the extra names and the addresses.
	Namespace     string
	ServiceName   string
	SecretName    string
	ExtraDNSNames []string
	IPAddresses   []string
	// MutatingWebhookConfiguration and ValidatingWebhookConfiguration get
	// the self-managed authority as their caBundle.
	MutatingWebhookConfiguration   string
	ValidatingWebhookConfiguration string
	// ResyncInterval is how often the self-managed Secret and caBundles
	// are checked again.
	ResyncInterval time.Duration

	// Admission is the scheduler name, resource names, opt-out label,
	// mode and fit-gate schedulers.
	Admission admission.Config

	// Logs are the k8s.io/component-base logging options (-v, --logging-format).
	Logs *logsapi.LoggingConfiguration
}

// NewOptions returns the defaults, which match Tessera's manifests.
func NewOptions() *Options {
	namespace := os.Getenv("POD_NAMESPACE")
	if namespace == "" {
		namespace = "tessera-system"
	}
	return &Options{
		ListenAddress:                  ":8443",
		MaxRequestBytes:                admission.DefaultMaxRequestBytes,
		ShutdownTimeout:                10 * time.Second,
		TLSMode:                        TLSModeSelfManaged,
		ReloadInterval:                 certs.DefaultReloadInterval,
		Namespace:                      namespace,
		ServiceName:                    "tessera-webhook",
		SecretName:                     "tessera-webhook-tls",
		MutatingWebhookConfiguration:   "tessera-webhook",
		ValidatingWebhookConfiguration: "tessera-webhook",
		ResyncInterval:                 certs.DefaultSelfManagedConfig().ResyncInterval,
		Admission:                      admission.DefaultConfig(),
		Logs:                           logsapi.NewLoggingConfiguration(),
	}
}

// AddFlags binds the options to flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ListenAddress, "listen-address", o.ListenAddress, "host:port of the HTTPS server (/mutate, /validate, /healthz, /readyz, /metrics)")
	fs.StringVar(&o.MetricsAddress, "metrics-address", o.MetricsAddress, "host:port also serving /metrics, /healthz and /readyz over plain HTTP; empty turns it off")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig file; empty: the in-cluster configuration")
	fs.Int64Var(&o.MaxRequestBytes, "max-request-bytes", o.MaxRequestBytes, "largest AdmissionReview body accepted")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", o.ShutdownTimeout, "how long in-flight reviews may finish on SIGTERM")

	fs.StringVar(&o.TLSMode, "tls-mode", o.TLSMode, `"files": serve --tls-cert-file and --tls-private-key-file; "self-managed": create a CA and certificate, keep them in --tls-secret-name, write the caBundle of the webhook configurations`)
	fs.StringVar(&o.CertFile, "tls-cert-file", o.CertFile, "PEM certificate (chain) served in files mode; reloaded when it changes")
	fs.StringVar(&o.KeyFile, "tls-private-key-file", o.KeyFile, "PEM private key of --tls-cert-file")
	fs.DurationVar(&o.ReloadInterval, "tls-reload-interval", o.ReloadInterval, "how often the certificate files are checked for changes")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "namespace of the webhook's Service and Secret; $POD_NAMESPACE, when set, is the default")
	fs.StringVar(&o.ServiceName, "service-name", o.ServiceName, "the webhook's Service; the self-managed certificate covers its DNS names")
	fs.StringVar(&o.SecretName, "tls-secret-name", o.SecretName, "Secret holding the self-managed CA and certificate, shared by replicas")
	fs.StringSliceVar(&o.ExtraDNSNames, "tls-extra-dns-names", o.ExtraDNSNames, "more DNS names the self-managed certificate covers")
	fs.StringSliceVar(&o.IPAddresses, "tls-ip-addresses", o.IPAddresses, "IP addresses the self-managed certificate covers, for a clientConfig.url such as https://127.0.0.1:8443")
	fs.StringVar(&o.MutatingWebhookConfiguration, "mutating-webhook-configuration", o.MutatingWebhookConfiguration, "MutatingWebhookConfiguration whose caBundle the self-managed mode writes; empty: none")
	fs.StringVar(&o.ValidatingWebhookConfiguration, "validating-webhook-configuration", o.ValidatingWebhookConfiguration, "ValidatingWebhookConfiguration whose caBundle the self-managed mode writes; empty: none")
	fs.DurationVar(&o.ResyncInterval, "tls-resync-interval", o.ResyncInterval, "how often the self-managed Secret and caBundles are checked again")

	a := &o.Admission
	fs.StringVar(&a.SchedulerName, "scheduler-name", a.SchedulerName, "scheduler written to spec.schedulerName of GPU pods that name none or default-scheduler")
	resourceFlag(fs, &a.ResourceNames.Count, "resource-count", "extended resource of the GPU count; a bare count means whole GPUs")
	resourceFlag(fs, &a.ResourceNames.Memory, "resource-memory", "extended resource of GPU memory in MiB")
	resourceFlag(fs, &a.ResourceNames.MemoryPercentage, "resource-memory-percentage", "extended resource of GPU memory as a percentage")
	resourceFlag(fs, &a.ResourceNames.Cores, "resource-cores", "extended resource of GPU cores in percent of one GPU")
	fs.StringVar(&a.OptOutLabel, "opt-out-label", a.OptOutLabel, "label that, set to --opt-out-value on a pod or its namespace, keeps the webhook away")
	fs.StringVar(&a.OptOutValue, "opt-out-value", a.OptOutValue, "value of --opt-out-label that opts out")
	fs.StringVar(&a.Mode, "mode", a.Mode, `how GPU pods are served: "extender" (Tessera's scheduler and device plugin: set the scheduler and GPU count) or "dra" (kube-scheduler and DRA driver gpu.tessera.dev: turn GPU resources into ResourceClaims); a namespace labelled --mode-label chooses its own`)
	fs.StringVar(&a.ModeLabel, "mode-label", a.ModeLabel, `namespace label that, set to "extender" or "dra", overrides --mode for the namespace's pods`)
	fs.StringVar(&a.DeviceClass, "dra-device-class", a.DeviceClass, "DeviceClass of the claims written in DRA mode")
	fs.StringVar(&a.DRASchedulerName, "dra-scheduler-name", a.DRASchedulerName, "scheduler written in DRA mode to spec.schedulerName of GPU pods that name none or default-scheduler (tessera-scheduler's DRA profile); empty: they keep the default scheduler")
	fs.StringSliceVar(&a.KueueIntegrations, "kueue-integrations", a.KueueIntegrations, `Kueue's integrations.frameworks (such as "batch/job,pod,deployment"): a GPU pod, Job or Deployment labelled kueue.x-k8s.io/queue-name that Kueue will not manage gets a warning saying why; empty: Kueue is not run, no such warning`)
	fs.StringVar(&a.KueueManagedNamespaces, "kueue-managed-namespaces", a.KueueManagedNamespaces, "Kueue's managedJobsNamespaceSelector as a label selector (such as kueue-managed=true), for the warnings of --kueue-integrations")
	fs.StringSliceVar(&a.FitGateSchedulers, "fit-gate-schedulers", a.FitGateSchedulers, "extender-mode schedulers (such as tessera-scheduler) whose GPU pods are created with the scheduling gate gpu.tessera.dev/fit, which the scheduler's extender, run with --fit-gate, lifts once some node could hold the pod; list no other, or its GPU pods wait forever; empty: no pod is gated")

	logsapi.AddFlags(o.Logs, fs)
}

func resourceFlag(fs *pflag.FlagSet, name *corev1.ResourceName, flag, usage string) {
	fs.Var((*resourceNameValue)(name), flag, usage)
}

// Validate names every flag that cannot work.
func (o *Options) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(o.ListenAddress); err != nil {
		errs = append(errs, fmt.Errorf("--listen-address %q: %w", o.ListenAddress, err))
	}
	if o.MetricsAddress != "" {
		if _, _, err := net.SplitHostPort(o.MetricsAddress); err != nil {
			errs = append(errs, fmt.Errorf("--metrics-address %q: %w", o.MetricsAddress, err))
		}
	}
	if o.MaxRequestBytes < 64<<10 {
		errs = append(errs, fmt.Errorf("--max-request-bytes %d: must be at least %d, room for a large pod", o.MaxRequestBytes, 64<<10))
	}
	if o.ShutdownTimeout < 0 {
		errs = append(errs, fmt.Errorf("--shutdown-timeout %v: must not be negative", o.ShutdownTimeout))
	}
	switch o.TLSMode {
	case TLSModeFiles:
		if o.CertFile == "" || o.KeyFile == "" {
			errs = append(errs, errors.New("--tls-mode=files needs --tls-cert-file and --tls-private-key-file"))
		}
		if o.ReloadInterval <= 0 {
			errs = append(errs, fmt.Errorf("--tls-reload-interval %v: must be positive", o.ReloadInterval))
		}
	case TLSModeSelfManaged:
		if _, err := o.selfManagedConfig(); err != nil {
			errs = append(errs, err)
		}
	default:
		errs = append(errs, fmt.Errorf("--tls-mode %q: must be %q or %q", o.TLSMode, TLSModeFiles, TLSModeSelfManaged))
	}
	if err := o.Admission.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// selfManagedConfig turns the flags into the certificate's configuration.
func (o *Options) selfManagedConfig() (certs.SelfManagedConfig, error) {
	cfg := certs.DefaultSelfManagedConfig()
	cfg.Namespace = o.Namespace
	cfg.SecretName = o.SecretName
	cfg.MutatingWebhookConfiguration = o.MutatingWebhookConfiguration
	cfg.ValidatingWebhookConfiguration = o.ValidatingWebhookConfiguration
	cfg.ResyncInterval = o.ResyncInterval
	if o.ServiceName != "" {
		svc := o.ServiceName
		cfg.DNSNames = []string{
			svc, svc + "." + o.Namespace, svc + "." + o.Namespace + ".svc", svc + "." + o.Namespace + ".svc.cluster.local",
		}
	}
	cfg.DNSNames = append(cfg.DNSNames, o.ExtraDNSNames...)
	for _, s := range o.IPAddresses {
		ip := net.ParseIP(s)
		if ip == nil {
			return cfg, fmt.Errorf("--tls-ip-addresses: %q is not an IP address", s)
		}
		cfg.IPs = append(cfg.IPs, ip)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("--tls-mode=self-managed: %w", err)
	}
	return cfg, nil
}

// resourceNameValue is a pflag.Value for a resource name.
type resourceNameValue corev1.ResourceName

var _ pflag.Value = (*resourceNameValue)(nil)

func (v *resourceNameValue) String() string { return string(*v) }

func (v *resourceNameValue) Set(s string) error {
	*v = resourceNameValue(s)
	return nil
}

func (v *resourceNameValue) Type() string { return "string" }

package options

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// Limits on the configuration.
const (
	// MaxBindWaitTimeout keeps a bind well inside any sane extender httpTimeout.
	MaxBindWaitTimeout = 5 * time.Minute
	// MinHeartbeatMaxAge keeps a node from flapping between device-plugin heartbeats.
	MinHeartbeatMaxAge = time.Second
	// MaxClientQPS bounds the API client's rate.
	MaxClientQPS = 10000
)

// Validate reports every invalid field of the configuration, naming the
// field and its limit.
func (c *Config) Validate() error {
	var errs field.ErrorList
	errs = append(errs, validateAddress(field.NewPath("listenAddress"), c.ListenAddress)...)
	errs = append(errs, c.validateTLS()...)
	if c.MetricsAddress != "" {
		errs = append(errs, validateAddress(field.NewPath("metricsAddress"), c.MetricsAddress)...)
		if c.MetricsAddress == c.ListenAddress {
			errs = append(errs, field.Invalid(field.NewPath("metricsAddress"), c.MetricsAddress, "must differ from listenAddress, which serves the extender's verbs"))
		}
	}
	if err := c.ResourceNames.Validate(); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("resourceNames"), c.ResourceNames, err.Error()))
	}
	if c.SchedulerName == "" {
		errs = append(errs, field.Required(field.NewPath("schedulerName"), "the scheduler profile whose pods get GPUs"))
	}
	for _, p := range []struct {
		name  string
		value gpurequest.Policy
	}{{"defaultNodePolicy", c.DefaultNodePolicy}, {"defaultGPUPolicy", c.DefaultGPUPolicy}} {
		if _, err := gpurequest.ParsePolicy(string(p.value)); err != nil {
			errs = append(errs, field.NotSupported(field.NewPath(p.name), p.value, []gpurequest.Policy{gpurequest.Binpack, gpurequest.Spread}))
		}
	}
	if !slices.Contains(view.HAMiCorePolicies(), c.HAMiCoreMissing) {
		errs = append(errs, field.NotSupported(field.NewPath("hamiCoreMissing"), c.HAMiCoreMissing, view.HAMiCorePolicies()))
	}
	errs = append(errs, durationAtLeast("heartbeatMaxAge", c.HeartbeatMaxAge.Duration, MinHeartbeatMaxAge)...)
	if c.LeaseNamespace == "" {
		errs = append(errs, field.Required(field.NewPath("leaseNamespace"), "the namespace of the nodes' Leases, which the device plugins renew"))
	} else {
		for _, msg := range validation.IsDNS1123Label(c.LeaseNamespace) {
			errs = append(errs, field.Invalid(field.NewPath("leaseNamespace"), c.LeaseNamespace, msg))
		}
	}
	errs = append(errs, durationAtLeast("bindWaitTimeout", c.BindWaitTimeout.Duration, time.Millisecond)...)
	if c.BindWaitTimeout.Duration > MaxBindWaitTimeout {
		errs = append(errs, field.Invalid(field.NewPath("bindWaitTimeout"), c.BindWaitTimeout.Duration.String(),
			fmt.Sprintf("must be at most %s, and below kube-scheduler's extender httpTimeout", MaxBindWaitTimeout)))
	}
	errs = append(errs, durationAtLeast("inFlightTTL", c.InFlightTTL.Duration, time.Millisecond)...)
	errs = append(errs, durationAtLeast("orphanSweepInterval", c.OrphanSweepInterval.Duration, time.Second)...)
	errs = append(errs, durationAtLeast("gangFit.holdTimeout", c.GangFit.HoldTimeout.Duration, time.Second)...)
	errs = append(errs, durationAtLeast("gangFit.retryAfter", c.GangFit.RetryAfter.Duration, time.Second)...)
	if c.GangFit.Enabled {
		errs = append(errs, validateLease(field.NewPath("gangFit"), c.GangFit.LeaseNamespace, c.GangFit.LeaseName)...)
	}
	if c.FitGate.Enabled {
		errs = append(errs, validateLease(field.NewPath("fitGate"), c.FitGate.LeaseNamespace, c.FitGate.LeaseName)...)
	}
	if c.ClientQPS <= 0 || c.ClientQPS > MaxClientQPS {
		errs = append(errs, field.Invalid(field.NewPath("clientQPS"), c.ClientQPS, fmt.Sprintf("must be greater than 0 and at most %d", MaxClientQPS)))
	}
	if c.ClientBurst < 1 {
		errs = append(errs, field.Invalid(field.NewPath("clientBurst"), c.ClientBurst, "must be at least 1"))
	}
	return errs.ToAggregate()
}

// validateTLS checks that the certificate and key come together, that a
// client authority comes with them, and that the verbs leave loopback only
// behind both.
func (c *Config) validateTLS() field.ErrorList {
	var errs field.ErrorList
	tls := c.TLSCertFile != "" || c.TLSKeyFile != ""
	if tls && (c.TLSCertFile == "" || c.TLSKeyFile == "") {
		errs = append(errs, field.Required(field.NewPath("tlsCertFile"), "tlsCertFile and tlsKeyFile must be set together"))
	}
	if c.ClientCAFile != "" && !tls {
		errs = append(errs, field.Forbidden(field.NewPath("clientCAFile"), "needs tlsCertFile and tlsKeyFile: a client certificate is asked for over TLS only"))
	}
	if host, _, err := net.SplitHostPort(c.ListenAddress); err == nil && !loopback(host) && (!tls || c.ClientCAFile == "") {
		errs = append(errs, field.Invalid(field.NewPath("listenAddress"), c.ListenAddress,
			"is not a loopback address, and /bind, which binds any pod to any node, takes no credentials: "+
				"serve it on 127.0.0.1 beside kube-scheduler, or set tlsCertFile, tlsKeyFile and clientCAFile so that only a caller with a client certificate from that authority reaches it"))
	}
	return errs
}

// loopback reports whether host names only this machine; an empty host is
// every interface.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func durationAtLeast(name string, d, min time.Duration) field.ErrorList {
	if d < min {
		return field.ErrorList{field.Invalid(field.NewPath(name), d.String(), fmt.Sprintf("must be at least %s", min))}
	}
	return nil
}

func validateAddress(path *field.Path, address string) field.ErrorList {
	_, port, err := net.SplitHostPort(address)
	if err != nil {
		return field.ErrorList{field.Invalid(path, address, "must be host:port: "+err.Error())}
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return field.ErrorList{field.Invalid(path, address, "port must be a number from 0 to 65535")}
	}
	return nil
}

// validateLease checks the namespace and name of an election's Lease,
// under path.
func validateLease(path *field.Path, namespace, name string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(namespace) {
		errs = append(errs, field.Invalid(path.Child("leaseNamespace"), namespace, msg))
	}
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(path.Child("leaseName"), name, msg))
	}
	return errs
}

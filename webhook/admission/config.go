package admission

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tessera-gpu/tessera/gpurequest"
)

// Defaults of Config.
const (
	// DefaultSchedulerName is the name Tessera's kube-scheduler profile runs under.
	DefaultSchedulerName = "tessera-scheduler"
	// DefaultOptOutLabel is the label that, set to DefaultOptOutValue on a pod
	// or its namespace, keeps the webhook away from it.
	DefaultOptOutLabel = "tessera.dev/webhook"
	// DefaultOptOutValue is the opt-out label's value that disables the webhook.
	DefaultOptOutValue = "disabled"
	// DefaultModeLabel is the namespace label that, set to ModeExtender or
	// ModeDRA, overrides the webhook's mode for that namespace's pods.
	DefaultModeLabel = "tessera.dev/mode"
	// DefaultDeviceClass is the DeviceClass the chart creates for the
	// GPUs of Tessera's DRA driver.
	DefaultDeviceClass = "gpu.tessera.dev"
	// DefaultKueueManagedNamespaces is Kueue's own default
	// managedJobsNamespaceSelector, as a label selector.
	DefaultKueueManagedNamespaces = "kubernetes.io/metadata.name notin (kube-system,kueue-system)"
)

// Modes say how the cluster serves a pod's GPUs, and so what the webhook
// makes of a pod that asks for them.
const (
	// ModeExtender: Tessera's scheduler places the pod and the device
	// plugin serves it; the webhook sets the scheduler and the GPU count.
	ModeExtender = "extender"
	// ModeDRA: stock kube-scheduler allocates the GPUs of Tessera's DRA
	// driver; the webhook turns the pod's GPU resources into claims.
	ModeDRA = "dra"
)

// Config is what the webhook needs to know about the cluster's Tessera set-up.
type Config struct {
	// SchedulerName is written to spec.schedulerName of GPU pods that name
	// no scheduler or the default one.
	SchedulerName string
	// ResourceNames are the extended resources GPU requests are made under.
	ResourceNames gpurequest.ResourceNames
	// OptOutLabel and OptOutValue: a pod or namespace labelled
	// OptOutLabel=OptOutValue is let through untouched.
	OptOutLabel string
	OptOutValue string
	// Mode is ModeExtender or ModeDRA, for every namespace that does not
	// choose its own with ModeLabel.
	Mode string
	// ModeLabel is the namespace label that chooses the mode of the
	// namespace's pods.
	ModeLabel string
	// DeviceClass is the DeviceClass of the claims the webhook writes in
	// DRA mode.
	DeviceClass string
	// DRASchedulerName, when set, is written to spec.schedulerName of the
	// GPU pods the webhook turns into claims that name no scheduler or
	// the default one: tessera-scheduler's DRA profile beside the
	// cluster's kube-scheduler. Empty leaves them to the default scheduler.
	DRASchedulerName string
	// KueueIntegrations are the kinds Kueue manages, as its
	// configuration's integrations.frameworks names them ("batch/job",
	// "pod", "deployment"). A pod, Job or Deployment that asks for GPUs
	// and names a Kueue queue that Kueue will not manage is admitted with a
	// warning that says why. Empty: Kueue is not run, and no such warning
	// is given.
	KueueIntegrations []string
	// KueueManagedNamespaces is Kueue's managedJobsNamespaceSelector,
	// written as a label selector: Kueue manages nothing in a namespace
	// whose labels it does not match.
	KueueManagedNamespaces string
	// FitGateSchedulers are the extender-mode schedulers whose GPU pods
	// are created with the fit gate (fitGateMutations), which their
	// extender lifts. Empty: no pod is gated.
	FitGateSchedulers []string
}

// DefaultConfig returns the configuration that matches Tessera's shipped
// manifests.
func DefaultConfig() Config {
	return Config{
		SchedulerName: DefaultSchedulerName,
		ResourceNames: gpurequest.DefaultResourceNames(),
		OptOutLabel:   DefaultOptOutLabel,
		OptOutValue:   DefaultOptOutValue,
		Mode:          ModeExtender,
		ModeLabel:     DefaultModeLabel,
		DeviceClass:   DefaultDeviceClass,

		KueueManagedNamespaces: DefaultKueueManagedNamespaces,
	}
}

// Validate reports the first field that cannot work, naming it.
func (c Config) Validate() error {
	if errs := validation.IsDNS1123Subdomain(c.SchedulerName); len(errs) > 0 {
		return fmt.Errorf("scheduler name %q: %v", c.SchedulerName, errs)
	}
	if c.DRASchedulerName != "" {
		if errs := validation.IsDNS1123Subdomain(c.DRASchedulerName); len(errs) > 0 {
			return fmt.Errorf("DRA scheduler name %q: %v", c.DRASchedulerName, errs)
		}
	}
	if err := c.ResourceNames.Validate(); err != nil {
		return err
	}
	if errs := validation.IsQualifiedName(c.OptOutLabel); len(errs) > 0 {
		return fmt.Errorf("opt-out label %q: %v", c.OptOutLabel, errs)
	}
	if errs := validation.IsValidLabelValue(c.OptOutValue); len(errs) > 0 {
		return fmt.Errorf("opt-out label value %q: %v", c.OptOutValue, errs)
	}
	if c.Mode != ModeExtender && c.Mode != ModeDRA {
		return fmt.Errorf("mode %q: must be %q or %q", c.Mode, ModeExtender, ModeDRA)
	}
	if errs := validation.IsQualifiedName(c.ModeLabel); len(errs) > 0 {
		return fmt.Errorf("mode label %q: %v", c.ModeLabel, errs)
	}
	if errs := validation.IsDNS1123Subdomain(c.DeviceClass); len(errs) > 0 {
		return fmt.Errorf("device class %q: %v", c.DeviceClass, errs)
	}
	for _, name := range c.KueueIntegrations {
		if name == "" {
			return fmt.Errorf("the Kueue integrations %q: an integration name must not be empty", c.KueueIntegrations)
		}
	}
	if _, err := labels.Parse(c.KueueManagedNamespaces); err != nil {
		return fmt.Errorf("the Kueue managed namespaces %q: not a label selector: %w", c.KueueManagedNamespaces, err)
	}
	for _, name := range c.FitGateSchedulers {
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return fmt.Errorf("fit gate scheduler name %q: %v", name, errs)
		}
	}
	return nil
}

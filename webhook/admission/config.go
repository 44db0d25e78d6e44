package admission

import (
	"fmt"

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
}

// DefaultConfig returns the configuration that matches Tessera's shipped
// manifests.
func DefaultConfig() Config {
	return Config{
		SchedulerName: DefaultSchedulerName,
		ResourceNames: gpurequest.DefaultResourceNames(),
		OptOutLabel:   DefaultOptOutLabel,
		OptOutValue:   DefaultOptOutValue,
	}
}

// Validate reports the first field that cannot work, naming it.
func (c Config) Validate() error {
	if errs := validation.IsDNS1123Subdomain(c.SchedulerName); len(errs) > 0 {
		return fmt.Errorf("scheduler name %q: %v", c.SchedulerName, errs)
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
	return nil
}

package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits of the numeric settings. The GPUNode API bounds a GPU's cores at
// 10000 and its share limit at 1024.
const (
	MaxSplitCount    = 1024
	MaxMemoryScaling = 100
	MaxCoreScaling   = 100
	minPeriod        = 100 * time.Millisecond
	// MinRescanPeriod bounds how often NVML is asked for every GPU and
	// MIG instance again.
	MinRescanPeriod = time.Second
)

// Validate returns every invalid field, each named and with its limit.
func (c *Configuration) Validate() error {
	var errs field.ErrorList
	if c.NodeName == "" {
		errs = append(errs, field.Required(field.NewPath("nodeName"), "the node the plugin runs on (flag --node-name, or NODE_NAME)"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(c.NodeName) {
			errs = append(errs, field.Invalid(field.NewPath("nodeName"), c.NodeName, msg))
		}
	}
	if c.SplitCount < 1 || c.SplitCount > MaxSplitCount {
		errs = append(errs, field.Invalid(field.NewPath("splitCount"), c.SplitCount, fmt.Sprintf("must be between 1 and %d", MaxSplitCount)))
	}
	if !(c.MemoryScaling > 0 && c.MemoryScaling <= MaxMemoryScaling) {
		errs = append(errs, field.Invalid(field.NewPath("memoryScaling"), c.MemoryScaling, fmt.Sprintf("must be greater than 0 and at most %d", MaxMemoryScaling)))
	}
	if !(c.CoreScaling > 0 && c.CoreScaling <= MaxCoreScaling) {
		errs = append(errs, field.Invalid(field.NewPath("coreScaling"), c.CoreScaling, fmt.Sprintf("must be greater than 0 and at most %d", MaxCoreScaling)))
	}
	if c.ResourceName == "" {
		errs = append(errs, field.Required(field.NewPath("resourceName"), "the GPU count resource, such as nvidia.com/gpu"))
	} else {
		for _, msg := range validation.IsQualifiedName(c.ResourceName) {
			errs = append(errs, field.Invalid(field.NewPath("resourceName"), c.ResourceName, msg))
		}
	}
	if !slices.Contains(Modes(), c.Mode) {
		errs = append(errs, field.NotSupported(field.NewPath("mode"), c.Mode, Modes()))
	}
	errs = append(errs, absolute(field.NewPath("pluginDir"), c.PluginDir, true)...)
	if c.Mode == ModeDRA {
		if c.DeviceListStrategy == StrategyVolumeMounts {
			errs = append(errs, field.Invalid(field.NewPath("deviceListStrategy"), c.DeviceListStrategy, "not supported in DRA mode, where containers get their GPUs through CDI: use envvar or cdi"))
		}
		errs = append(errs, absolute(field.NewPath("draPluginDir"), c.DRAPluginDir, true)...)
		errs = append(errs, absolute(field.NewPath("pluginRegistryDir"), c.PluginRegistryDir, true)...)
	}
	errs = append(errs, c.socketPaths()...)
	errs = append(errs, absolute(field.NewPath("procRoot"), c.ProcRoot, true)...)
	errs = append(errs, absolute(field.NewPath("libraryPath"), c.LibraryPath, false)...)
	errs = append(errs, absolute(field.NewPath("preloadFile"), c.PreloadFile, false)...)
	if c.LibraryPath != "" {
		errs = append(errs, absolute(field.NewPath("libraryContainerPath"), c.LibraryContainerPath, true)...)
	}
	if !slices.Contains(DeviceListStrategies(), c.DeviceListStrategy) {
		errs = append(errs, field.NotSupported(field.NewPath("deviceListStrategy"), c.DeviceListStrategy, DeviceListStrategies()))
	}
	if c.DynamicMIG && c.DeviceListStrategy == StrategyCDI {
		errs = append(errs, field.Invalid(field.NewPath("deviceListStrategy"), c.DeviceListStrategy, "not supported with dynamicMIG: the CDI spec names devices before they exist, and a MIG instance made on demand does not yet; use envvar or volume-mounts"))
	}
	errs = append(errs, absolute(field.NewPath("cdiSpecDir"), c.CDISpecDir, c.DeviceListStrategy == StrategyCDI || c.Mode == ModeDRA)...)
	errs = append(errs, absolute(field.NewPath("driverRoot"), c.DriverRoot, false)...)
	errs = append(errs, absolute(field.NewPath("hostDriverRoot"), c.HostDriverRoot, true)...)
	errs = append(errs, absolute(field.NewPath("podResourcesSocket"), c.PodResourcesSocket, false)...)
	errs = append(errs, period(field.NewPath("heartbeatPeriod"), c.HeartbeatPeriod.Duration)...)
	if c.LeaseNamespace == "" {
		errs = append(errs, field.Required(field.NewPath("leaseNamespace"), "the namespace of the node's Lease, watched by the scheduler extender"))
	} else {
		for _, msg := range validation.IsDNS1123Label(c.LeaseNamespace) {
			errs = append(errs, field.Invalid(field.NewPath("leaseNamespace"), c.LeaseNamespace, msg))
		}
	}
	errs = append(errs, period(field.NewPath("simulatedReloadPeriod"), c.SimulatedReloadPeriod.Duration)...)
	errs = append(errs, period(field.NewPath("healthRecoveryPeriod"), c.HealthRecoveryPeriod.Duration)...)
	errs = append(errs, atLeast(field.NewPath("rescanPeriod"), c.RescanPeriod.Duration, MinRescanPeriod)...)
	errs = append(errs, period(field.NewPath("allocationLookupTimeout"), c.AllocationLookupTimeout.Duration)...)
	return errs.ToAggregate()
}

func absolute(path *field.Path, value string, required bool) field.ErrorList {
	switch {
	case value == "" && required:
		return field.ErrorList{field.Required(path, "must be an absolute path")}
	case value != "" && !filepath.IsAbs(value):
		return field.ErrorList{field.Invalid(path, value, "must be an absolute path")}
	}
	return nil
}

func period(path *field.Path, d time.Duration) field.ErrorList {
	return atLeast(path, d, minPeriod)
}

func atLeast(path *field.Path, d, least time.Duration) field.ErrorList {
	if d < least {
		return field.ErrorList{field.Invalid(path, d.String(), fmt.Sprintf("must be at least %s", least))}
	}
	return nil
}

func filepathJoinDir(file, name string) string {
	return filepath.Join(filepath.Dir(file), name)
}

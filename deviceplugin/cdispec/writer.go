package cdispec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"

	"k8s.io/klog/v2"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/tessera-gpu/tessera/deviceplugin/driver"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

// SpecName is the spec's file name in the spec directory, without its
// extension.
const SpecName = "tessera.dev-gpu"

// Writer keeps the node's spec file in one directory.
type Writer struct {
	// Dir is the CDI spec directory, such as /var/run/cdi.
	Dir string
	// DriverRoot holds the driver files the spec mounts; a zero Root
	// mounts none, leaving the driver's libraries to the runtime.
	DriverRoot driver.Root
}

// Write writes the spec of the GPUs discovered under the driver version,
// replacing the file atomically (a runtime reading it meanwhile sees the
// old spec or the new, never a part), and only when it changed.
func (w Writer) Write(ctx context.Context, inv gpu.Inventory) error {
	logger := klog.FromContext(ctx)
	var files []driver.File
	if w.DriverRoot.Path != "" {
		var err error
		if files, err = w.DriverRoot.Files(inv.DriverVersion); err != nil {
			return fmt.Errorf("finding the driver files for the CDI spec: %w", err)
		}
	}
	spec, err := Build(inv.Devices, files)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(w.Dir, 0o755); err != nil {
		return fmt.Errorf("creating the CDI spec directory: %w", err)
	}
	cache, err := cdi.NewCache(cdi.WithSpecDirs(w.Dir), cdi.WithAutoRefresh(false))
	if err != nil {
		return fmt.Errorf("reading the CDI spec directory %s: %w", w.Dir, err)
	}
	path := w.Path()
	if old, err := cdi.ReadSpec(path, 0); err == nil && reflect.DeepEqual(old.Spec, spec) {
		logger.V(4).Info("CDI spec unchanged", "path", path)
		return nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		logger.Info("Replacing an unreadable CDI spec", "path", path, "err", err)
	}
	if err := cache.WriteSpec(spec, SpecName+".yaml"); err != nil {
		return fmt.Errorf("writing the CDI spec %s: %w", path, err)
	}
	// The library creates the file private to root; the runtime reads it
	// as root, but a person checking the node should not need to.
	if err := os.Chmod(path, 0o644); err != nil {
		return fmt.Errorf("writing the CDI spec %s: %w", path, err)
	}
	logger.Info("Wrote the CDI spec", "path", path, "devices", len(spec.Devices), "driverFiles", len(files))
	return nil
}

// Path is the spec file.
func (w Writer) Path() string {
	return w.Dir + "/" + SpecName + ".yaml"
}

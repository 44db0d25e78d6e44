package cdispec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"

	"k8s.io/klog/v2"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/tessera-gpu/tessera/deviceplugin/driver"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/internal/atomicfile"
)

// SpecName is the spec's file name in the spec directory, without its
// extension.
const SpecName = "tessera.dev-gpu"

// fileName is the spec's file in the spec directory.
const fileName = SpecName + ".yaml"

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
	path := w.Path()
	removed, err := atomicfile.RemoveStale(path)
	for _, name := range removed {
		logger.Info("Removed a CDI spec whose write did not finish", "file", name)
	}
	if err != nil {
		return err
	}
	if old, err := cdi.ReadSpec(path, 0); err == nil && reflect.DeepEqual(old.Spec, spec) {
		logger.V(4).Info("CDI spec unchanged", "path", path)
		return nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		logger.Info("Replacing an unreadable CDI spec", "path", path, "err", err)
	}
	if err := WriteFile(w.Dir, fileName, spec); err != nil {
		return err
	}
	logger.Info("Wrote the CDI spec", "path", path, "devices", len(spec.Devices), "driverFiles", len(files))
	return nil
}

// Path is the spec file.
func (w Writer) Path() string {
	return filepath.Join(w.Dir, fileName)
}

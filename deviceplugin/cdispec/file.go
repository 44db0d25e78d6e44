package cdispec

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	cdispecs "tags.cncf.io/container-device-interface/specs-go"
)

// tempSuffix ends the name of a spec still being written. Runtimes read
// only .json and .yaml files as specs, so they skip it.
const tempSuffix = ".tmp"

// WriteFile writes spec to the file name in dir, encoded as its extension
// (.json or .yaml) says and readable by all. The bytes go to a temporary
// file beside it, are read back through the CDI library as a runtime
// reads them, and the temporary file is renamed over name: a runtime sees
// the old spec or the new, never a part, and never an invalid one.
//
// The temporary file is named after the spec (name.<random>.tmp), not
// with the CDI library's spec.<random>.tmp, which every writer to the
// directory shares: a daemon killed before the rename leaves a file that
// its next start knows as its own and removes (RemoveStale), where a
// spec.*.tmp could be another writer's half-done write.
func WriteFile(dir, name string, spec *cdispecs.Spec) error {
	var data []byte
	var err error
	switch filepath.Ext(name) {
	case ".json":
		data, err = json.Marshal(spec)
	case ".yaml":
		data, err = yaml.Marshal(spec)
	default:
		return fmt.Errorf("CDI spec file %q: the name must end in .json or .yaml", name)
	}
	if err != nil {
		return fmt.Errorf("encoding the CDI spec %s: %w", name, err)
	}
	tmp, err := os.CreateTemp(dir, name+".*"+tempSuffix)
	if err != nil {
		return fmt.Errorf("writing the CDI spec %s: %w", name, err)
	}
	_, err = tmp.Write(data)
	err = errors.Join(err, tmp.Close())
	if err == nil {
		// Checked in the file, as the runtime will read it.
		_, err = cdi.ReadSpec(tmp.Name(), 0)
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing the CDI spec %s: %w", name, err)
	}
	return nil
}

// RemoveStale removes the temporary files that writes of the spec file
// name left in dir when their writer died before renaming them.
func RemoveStale(dir, name string) ([]string, error) {
	left, err := filepath.Glob(filepath.Join(dir, name+".*"+tempSuffix))
	if err != nil {
		return nil, err
	}
	var errs []error
	var removed []string
	for _, path := range left {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing an unfinished CDI spec: %w", err))
			continue
		}
		removed = append(removed, filepath.Base(path))
	}
	return removed, errors.Join(errs...)
}

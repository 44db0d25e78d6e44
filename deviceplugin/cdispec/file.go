package cdispec

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"sigs.k8s.io/yaml"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	cdispecs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/tessera-gpu/tessera/internal/atomicfile"
)

// WriteFile writes spec to the file name in dir, encoded as its extension
// (.json or .yaml) says and readable by all, replacing it atomically
// (internal/atomicfile). The bytes are read back through the CDI library,
// as a runtime reads them, before they replace the old file: a runtime
// never sees a part of a spec, nor an invalid one.
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
	err = atomicfile.Write(filepath.Join(dir, name), data, 0o644, func(tmp string) error {
		_, err := cdi.ReadSpec(tmp, 0)
		return err
	})
	if err != nil {
		return fmt.Errorf("writing the CDI spec %s: %w", name, err)
	}
	return nil
}

package config

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// Load reads a YAML or JSON configuration file over the defaults. Unknown
// fields are refused, so a misspelt setting is not silently ignored.
func Load(path string) (Configuration, error) {
	cfg := Default()
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("reading configuration file: %w", err)
	}
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return cfg, fmt.Errorf("configuration file %s: %w", path, err)
	}
	return cfg, nil
}

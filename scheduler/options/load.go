package options

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"sigs.k8s.io/yaml"
)

// maxConfigFileBytes bounds the configuration file; a real one is a few hundred bytes.
const maxConfigFileBytes = 1 << 20

// LoadFile reads a YAML configuration file onto the defaults. Unknown
// fields are an error, so a misspelt key is not silently ignored.
func LoadFile(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading configuration file: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("configuration file %s: %w", path, err)
	}
	return c, nil
}

// Parse reads a YAML configuration onto the defaults.
func Parse(data []byte) (*Config, error) {
	if len(data) > maxConfigFileBytes {
		return nil, fmt.Errorf("is %d bytes: must be at most %d", len(data), maxConfigFileBytes)
	}
	c := NewConfig()
	if err := yaml.UnmarshalStrict(data, c); err != nil {
		return nil, fmt.Errorf("parsing: %w", withField(data, err))
	}
	return c, nil
}

// Fields returns the top-level fields a YAML or JSON configuration sets,
// in order of name, each with its value as JSON.
func Fields(data []byte) ([]string, map[string]json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := yaml.Unmarshal(data, &fields); err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	return names, fields, nil
}

// withField names the top-level field a decoding error comes from, since
// errors from a field's own decoder, such as a duration's, do not.
func withField(data []byte, err error) error {
	names, fields, ferr := Fields(data)
	if ferr != nil {
		return err
	}
	for _, name := range names {
		one, _ := json.Marshal(map[string]json.RawMessage{name: fields[name]})
		if yaml.UnmarshalStrict(one, NewConfig()) != nil {
			return fmt.Errorf("field %s: %w", name, err)
		}
	}
	return err
}

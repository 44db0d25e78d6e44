package harness

import (
	"errors"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// builtinExtenderConfig is Tessera's KubeSchedulerConfiguration for the
// extender, used when deploy/ has none yet: one profile, the extender
// for filter, prioritize and bind with node names only, GPU memory and
// cores left to the extender, the GPU count checked by kube-scheduler too,
// and the GPU quota's totals left to ResourceQuota.
const builtinExtenderConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: tessera-scheduler
extenders:
- urlPrefix: http://127.0.0.1:8888
  filterVerb: filter
  prioritizeVerb: prioritize
  bindVerb: bind
  weight: 1
  nodeCacheCapable: true
  httpTimeout: 30s
  ignorable: false
  managedResources:
  - name: nvidia.com/gpu
    ignoredByScheduler: false
  - name: nvidia.com/gpumem
    ignoredByScheduler: true
  - name: nvidia.com/gpumem-percentage
    ignoredByScheduler: true
  - name: nvidia.com/gpucores
    ignoredByScheduler: true
  - name: gpu.tessera.dev/gpus
    ignoredByScheduler: true
  - name: gpu.tessera.dev/cores
    ignoredByScheduler: true
  - name: gpu.tessera.dev/memory
    ignoredByScheduler: true
`

// SchedulerConfig is a KubeSchedulerConfiguration for one row.
type SchedulerConfig struct {
	// YAML is the configuration, for framework.StartSchedulerProcess.
	YAML string
	// SchedulerName is its one profile's name, which the pods ask for.
	SchedulerName string
	// Source says where it came from, for the log.
	Source string
}

// LoadExtenderConfig reads the KubeSchedulerConfiguration at path, or the
// built-in one if there is no such file.
func LoadExtenderConfig(path string) (SchedulerConfig, error) {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return parseExtenderConfig([]byte(builtinExtenderConfig), "built-in (no "+path+")")
	case err != nil:
		return SchedulerConfig{}, fmt.Errorf("reading --scheduler-config: %w", err)
	}
	return parseExtenderConfig(data, path)
}

// parseExtenderConfig checks that data is a configuration with one profile
// and at least one extender, and returns it.
func parseExtenderConfig(data []byte, source string) (SchedulerConfig, error) {
	config, _, name, err := decodeOneProfile(data, source)
	if err != nil {
		return SchedulerConfig{}, err
	}
	extenders, _ := config["extenders"].([]any)
	if len(extenders) == 0 {
		return SchedulerConfig{}, fmt.Errorf("the scheduler configuration %s has no extenders", source)
	}
	return SchedulerConfig{YAML: string(data), SchedulerName: name, Source: source}, nil
}

// WithExtenderURL returns the configuration with every extender's
// urlPrefix set to url, where the bench's extender listens.
func (c SchedulerConfig) WithExtenderURL(url string) (SchedulerConfig, error) {
	config := map[string]any{}
	if err := yaml.Unmarshal([]byte(c.YAML), &config); err != nil {
		return c, fmt.Errorf("decoding the scheduler configuration %s: %w", c.Source, err)
	}
	extenders, _ := config["extenders"].([]any)
	for i, e := range extenders {
		extender, ok := e.(map[string]any)
		if !ok {
			return c, fmt.Errorf("the scheduler configuration %s: extenders[%d] is not an object", c.Source, i)
		}
		extender["urlPrefix"] = url
	}
	data, err := yaml.Marshal(config)
	if err != nil {
		return c, err
	}
	c.YAML = string(data)
	return c, nil
}

// withoutExtenders returns the configuration with its extenders removed:
// kube-scheduler alone, with everything else (profile, percentage of nodes
// to score) as in the extender rows, so that only the extender differs.
func (c SchedulerConfig) withoutExtenders() (SchedulerConfig, error) {
	config := map[string]any{}
	if err := yaml.Unmarshal([]byte(c.YAML), &config); err != nil {
		return c, fmt.Errorf("decoding the scheduler configuration %s: %w", c.Source, err)
	}
	delete(config, "extenders")
	data, err := yaml.Marshal(config)
	if err != nil {
		return c, err
	}
	c.YAML = string(data)
	c.Source += ", extenders removed"
	return c, nil
}

// LoadPluginConfig reads tessera-scheduler's KubeSchedulerConfiguration at
// path for row d: one profile, named schedulerName as in the other rows,
// whose Tessera plugin args accept a Lease renewed once (heartbeatMaxAge
// 24h, as the extender gets in row c).
func LoadPluginConfig(path, schedulerName string) (SchedulerConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return SchedulerConfig{}, fmt.Errorf("reading --plugin-config: %w", err)
	}
	return parsePluginConfig(data, path, schedulerName)
}

func parsePluginConfig(data []byte, source, schedulerName string) (SchedulerConfig, error) {
	config, profile, name, err := decodeOneProfile(data, source)
	if err != nil {
		return SchedulerConfig{}, err
	}
	if name != schedulerName {
		return SchedulerConfig{}, fmt.Errorf("the scheduler configuration %s: profiles[0].schedulerName is %q, the other rows' pods ask for %q", source, name, schedulerName)
	}
	pluginConfig, _ := profile["pluginConfig"].([]any)
	found := false
	for _, pc := range pluginConfig {
		entry, _ := pc.(map[string]any)
		if entry["name"] != "Tessera" {
			continue
		}
		args, _ := entry["args"].(map[string]any)
		if args == nil {
			args = map[string]any{}
			entry["args"] = args
		}
		args["heartbeatMaxAge"] = "24h"
		found = true
	}
	if !found {
		return SchedulerConfig{}, fmt.Errorf("the scheduler configuration %s has no pluginConfig for Tessera", source)
	}
	out, err := yaml.Marshal(config)
	if err != nil {
		return SchedulerConfig{}, err
	}
	return SchedulerConfig{YAML: string(out), SchedulerName: schedulerName, Source: source + ", heartbeatMaxAge 24h"}, nil
}

// LoadDRAConfig reads tessera-scheduler's KubeSchedulerConfiguration at
// path for row e: one profile, renamed schedulerName, the name the other
// rows' pods ask for.
func LoadDRAConfig(path, schedulerName string) (SchedulerConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return SchedulerConfig{}, fmt.Errorf("reading --dra-config: %w", err)
	}
	config, profile, _, err := decodeOneProfile(data, path)
	if err != nil {
		return SchedulerConfig{}, err
	}
	profile["schedulerName"] = schedulerName
	out, err := yaml.Marshal(config)
	if err != nil {
		return SchedulerConfig{}, err
	}
	return SchedulerConfig{YAML: string(out), SchedulerName: schedulerName, Source: path + ", profile " + schedulerName}, nil
}

// decodeOneProfile decodes a KubeSchedulerConfiguration that has exactly
// one profile, with a name, and returns it, its profile and that name.
func decodeOneProfile(data []byte, source string) (config, profile map[string]any, name string, err error) {
	config = map[string]any{}
	if err := yaml.Unmarshal(data, &config); err != nil {
		return nil, nil, "", fmt.Errorf("decoding the scheduler configuration %s: %w", source, err)
	}
	profiles, _ := config["profiles"].([]any)
	if len(profiles) != 1 {
		return nil, nil, "", fmt.Errorf("the scheduler configuration %s has %d profiles: the bench needs exactly one", source, len(profiles))
	}
	profile, _ = profiles[0].(map[string]any)
	name, _ = profile["schedulerName"].(string)
	if name == "" {
		return nil, nil, "", fmt.Errorf("the scheduler configuration %s: profiles[0].schedulerName is empty", source)
	}
	return config, profile, name, nil
}

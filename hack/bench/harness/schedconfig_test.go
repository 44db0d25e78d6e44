package harness

import (
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/test/framework"
)

func TestParseExtenderConfig(t *testing.T) {
	tests := []struct {
		name     string
		yaml     string
		wantName string
		wantErr  string
	}{
		{name: "the built-in configuration", yaml: builtinExtenderConfig, wantName: "tessera-scheduler"},
		{name: "two profiles are refused", yaml: "profiles:\n- schedulerName: a\n- schedulerName: b\nextenders:\n- urlPrefix: x\n", wantErr: "2 profiles"},
		{name: "a profile without a name is refused", yaml: "profiles:\n- {}\nextenders:\n- urlPrefix: x\n", wantErr: "schedulerName is empty"},
		{name: "no extender is refused", yaml: "profiles:\n- schedulerName: a\n", wantErr: "no extenders"},
		{name: "not YAML", yaml: "profiles: [", wantErr: "decoding"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseExtenderConfig([]byte(tt.yaml), "test")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parse = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got.SchedulerName != tt.wantName {
				t.Fatalf("parse = %+v, %v; want scheduler %q", got, err, tt.wantName)
			}
		})
	}
}

// TestDeployedConfigIsUsable reads the KubeSchedulerConfiguration that
// deploy/ ships, as rows b and c do.
func TestDeployedConfigIsUsable(t *testing.T) {
	path := filepath.Join(framework.RepoRoot(), NewOptions().SchedulerConfig)
	config, err := LoadExtenderConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if config.SchedulerName != "tessera-scheduler" {
		t.Errorf("profile %q, want tessera-scheduler", config.SchedulerName)
	}
}

func TestRewrites(t *testing.T) {
	base, err := parseExtenderConfig([]byte(builtinExtenderConfig+"percentageOfNodesToScore: 100\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	decode := func(c SchedulerConfig) map[string]any {
		m := map[string]any{}
		if err := yaml.Unmarshal([]byte(c.YAML), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}

	withURL, err := base.WithExtenderURL("http://127.0.0.1:4242")
	if err != nil {
		t.Fatal(err)
	}
	ext := decode(withURL)["extenders"].([]any)[0].(map[string]any)
	if ext["urlPrefix"] != "http://127.0.0.1:4242" || ext["bindVerb"] != "bind" || ext["nodeCacheCapable"] != true {
		t.Errorf("extender after the URL rewrite: %v", ext)
	}

	alone, err := base.withoutExtenders()
	if err != nil {
		t.Fatal(err)
	}
	m := decode(alone)
	if _, ok := m["extenders"]; ok {
		t.Errorf("extenders left in %s", alone.YAML)
	}
	if m["percentageOfNodesToScore"] != float64(100) || alone.SchedulerName != base.SchedulerName {
		t.Errorf("the rest of the configuration changed: %s", alone.YAML)
	}
}

func TestParsePluginConfig(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		wantErr string
	}{
		{name: "the Tessera args get a day's heartbeat age", yaml: "profiles:\n- schedulerName: tessera-scheduler\n  pluginConfig:\n  - name: Tessera\n    args:\n      heartbeatMaxAge: 2m\n      defaultNodePolicy: binpack\n"},
		{name: "Tessera without args gets them", yaml: "profiles:\n- schedulerName: tessera-scheduler\n  pluginConfig:\n  - name: Tessera\n"},
		{name: "another profile name is refused", yaml: "profiles:\n- schedulerName: other\n  pluginConfig:\n  - name: Tessera\n", wantErr: `schedulerName is "other", the other rows' pods ask for "tessera-scheduler"`},
		{name: "no Tessera plugin is refused", yaml: "profiles:\n- schedulerName: tessera-scheduler\n", wantErr: "no pluginConfig for Tessera"},
		{name: "two profiles are refused", yaml: "profiles:\n- schedulerName: a\n- schedulerName: b\n", wantErr: "2 profiles"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parsePluginConfig([]byte(tt.yaml), "test", "tessera-scheduler")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parse = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := map[string]any{}
			if err := yaml.Unmarshal([]byte(got.YAML), &m); err != nil {
				t.Fatal(err)
			}
			args := m["profiles"].([]any)[0].(map[string]any)["pluginConfig"].([]any)[0].(map[string]any)["args"].(map[string]any)
			if args["heartbeatMaxAge"] != "24h" {
				t.Errorf("Tessera's args after the rewrite: %v", args)
			}
			if strings.Contains(tt.yaml, "binpack") && args["defaultNodePolicy"] != "binpack" {
				t.Errorf("the other args changed: %v", args)
			}
		})
	}
}

// TestDeployedPluginConfigIsUsable reads tessera-scheduler's configuration
// that deploy/ ships, as row d does.
func TestDeployedPluginConfigIsUsable(t *testing.T) {
	if _, err := LoadPluginConfig(filepath.Join(framework.RepoRoot(), NewOptions().PluginConfig), "tessera-scheduler"); err != nil {
		t.Fatal(err)
	}
}

package drascore

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/gpurequest"
)

func TestDecodeArgs(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    *args
		wantErr string
	}{
		{name: "none: the defaults", want: &args{DefaultNodePolicy: gpurequest.Binpack, DefaultGPUPolicy: gpurequest.Spread, DeviceClasses: []string{"gpu.tessera.dev"}}},
		{name: "the shipped fields", raw: "defaultNodePolicy: spread\ndeviceClasses: [gpu.tessera.dev, gpu.example.com]",
			want: &args{DefaultNodePolicy: gpurequest.Spread, DefaultGPUPolicy: gpurequest.Spread, DeviceClasses: []string{"gpu.tessera.dev", "gpu.example.com"}}},
		{name: "an unknown field", raw: "defaultPolicy: spread", wantErr: `unknown field "defaultPolicy"`},
		{name: "an unknown policy", raw: "defaultNodePolicy: fill", wantErr: `defaultNodePolicy: unknown policy "fill"`},
		{name: "no class", raw: "deviceClasses: []", wantErr: "deviceClasses: name at least one DeviceClass"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var obj runtime.Object
			if tc.raw != "" {
				obj = &runtime.Unknown{Raw: []byte(tc.raw)}
			}
			got, err := decodeArgs(obj)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// shippedProfile is what TestShippedConfig reads of a profile.
type shippedProfile struct {
	Plugins      map[string]struct{ Enabled []struct{ Name string } }
	PluginConfig []pluginConfig
}

type pluginConfig struct {
	Name string
	Args json.RawMessage
}

// TestShippedConfig checks that deploy/scheduler/tessera-scheduler-dra-config.yaml
// enables the plugin where it runs (the quota at preFilter and filter, the
// score at preScore and score) and gives it arguments it takes.
func TestShippedConfig(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "scheduler", "tessera-scheduler-dra-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var config struct{ Profiles []shippedProfile }
	if err := yaml.Unmarshal(data, &config); err != nil {
		t.Fatal(err)
	}
	if len(config.Profiles) != 1 {
		t.Fatalf("%d profiles, want 1", len(config.Profiles))
	}
	profile := config.Profiles[0]
	for _, point := range []string{"preFilter", "filter", "preScore", "score"} {
		if !slices.ContainsFunc(profile.Plugins[point].Enabled, func(p struct{ Name string }) bool { return p.Name == Name }) {
			t.Errorf("%s is not enabled at %s", Name, point)
		}
	}
	i := slices.IndexFunc(profile.PluginConfig, func(c pluginConfig) bool { return c.Name == Name })
	if i < 0 {
		t.Fatalf("no pluginConfig for %s", Name)
	}
	if _, err := decodeArgs(&runtime.Unknown{Raw: profile.PluginConfig[i].Args}); err != nil {
		t.Errorf("the shipped arguments: %v", err)
	}
}

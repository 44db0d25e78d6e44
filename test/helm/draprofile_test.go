package helm

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/test/framework"
)

// TestDRAProfile checks that scheduler.dra.schedulerName adds, in plugin
// mode, the profile of deploy/scheduler/tessera-scheduler-dra-config.yaml
// under that name beside the plugin's, and has the webhook hand the pods
// it turns into claims to it; unset, there is one profile and DRA pods
// stay with the cluster's kube-scheduler.
func TestDRAProfile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "deploy", "scheduler", "tessera-scheduler-dra-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var shipped struct{ Profiles []map[string]any }
	if err := yaml.Unmarshal(data, &shipped); err != nil {
		t.Fatal(err)
	}
	want := shipped.Profiles[0]
	want["schedulerName"] = "tessera-scheduler-dra"

	r := defaults()
	r.values = map[string]any{"scheduler": map[string]any{"mode": "plugin", "dra": map[string]any{"schedulerName": "tessera-scheduler-dra"}}}
	objs := r.mustTemplate(t)
	profiles, _ := schedulerConfig(t, objs)["profiles"].([]any)
	if len(profiles) != 2 {
		t.Fatalf("%d profiles, want the plugin's and the DRA one", len(profiles))
	}
	if !reflect.DeepEqual(normalize(t, profiles[1]), normalize(t, want)) {
		got, _ := yaml.Marshal(profiles[1])
		t.Errorf("the chart's DRA profile differs from deploy/scheduler/tessera-scheduler-dra-config.yaml's:\nchart:\n%s\ndeploy:\n%s", got, data)
	}
	command := containerCommand(t, findOne(t, objs, "Deployment", "-webhook"), "webhook")
	if !slices.Contains(command, "--dra-scheduler-name=tessera-scheduler-dra") {
		t.Errorf("webhook command %v does not hand DRA pods to the DRA profile", command)
	}

	r.values = map[string]any{"scheduler": map[string]any{"mode": "plugin"}}
	objs = r.mustTemplate(t)
	if profiles, _ := schedulerConfig(t, objs)["profiles"].([]any); len(profiles) != 1 {
		t.Errorf("%d profiles without scheduler.dra.schedulerName, want 1", len(profiles))
	}
	for _, arg := range containerCommand(t, findOne(t, objs, "Deployment", "-webhook"), "webhook") {
		if strings.HasPrefix(arg, "--dra-scheduler-name") {
			t.Errorf("webhook command has %s without a DRA profile", arg)
		}
	}
}

package framework

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestKueueScopeOfTheShippedConfiguration(t *testing.T) {
	integrations, namespaces, err := KueueScope(filepath.Join(RepoRoot(), KueueConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"batch/job", "pod", "deployment"}; !slices.Equal(integrations, want) {
		t.Errorf("integrations = %q, want %q", integrations, want)
	}
	if want := "kueue-managed=true"; namespaces != want {
		t.Errorf("managed namespaces = %q, want %q", namespaces, want)
	}
}

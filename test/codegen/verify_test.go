// Package codegen checks that hack/verify-codegen.sh guards the generated
// code: it passes on the tree as committed and fails once the API types
// change without regeneration.
package codegen

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-gpu/tessera/test/framework"
)

func TestVerifyCodegen(t *testing.T) {
	tree := t.TempDir()
	copyTree(t, framework.RepoRoot(), tree)

	if out, err := verify(tree); err != nil {
		t.Fatalf("verify-codegen.sh fails on the tree as it is: %v\n%s", err, out)
	}

	types := filepath.Join(tree, "apis", "gpu", "v1alpha1", "types.go")
	src, err := os.ReadFile(types)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(src),
		"type GPUNodeSpec struct {\n",
		"type GPUNodeSpec struct {\n\t// labels is a new field that nothing was regenerated for.\n\t// +optional\n\t// +listType=atomic\n\tLabels []string `json:\"labels,omitempty\"`\n\n", 1)
	if changed == string(src) {
		t.Fatal("could not find GPUNodeSpec in types.go to add a field to")
	}
	if err := os.WriteFile(types, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := verify(tree)
	if err == nil {
		t.Fatalf("verify-codegen.sh passed after a field was added without regenerating:\n%s", out)
	}
	if !strings.Contains(out, "generated code is out of date") {
		t.Errorf("verify-codegen.sh failed without saying why:\n%s", out)
	}
}

func verify(tree string) (string, error) {
	cmd := exec.Command(filepath.Join(tree, "hack", "verify-codegen.sh"))
	cmd.Dir = tree
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// copyTree copies the source tree without VCS data or build output.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", `tar -C "$1" --exclude=.git --exclude=_output -cf - . | tar -C "$2" -xf -`, "sh", from, to)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("copying the tree: %v\n%s", err, out)
	}
}

package helm

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/test/framework"
)

// HelmEnv names the Helm binary to use. When it is unset the tests ask
// hack/build-helm.sh, which builds the pinned version once and caches it.
const HelmEnv = "TESSERA_HELM"

var helmBinary = sync.OnceValues(func() (string, error) {
	if path := os.Getenv(HelmEnv); path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("%s=%s: %w", HelmEnv, path, err)
		}
		return path, nil
	}
	script := filepath.Join(framework.RepoRoot(), "hack", "build-helm.sh")
	cmd := exec.Command(script)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building Helm with %s: %w", script, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	path := lines[len(lines)-1]
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s printed %q, which is not a file: %w", script, path, err)
	}
	return path, nil
})

// chartDir is the chart under test.
func chartDir() string {
	return filepath.Join(framework.RepoRoot(), "deploy", "helm", "tessera")
}

// readChart reads every file of the chart in the test's own process. Helm
// reads them in a child process, which go test's result cache does not
// see; reading them here makes a changed chart re-run the tests.
var readChart = sync.OnceValue(func() error {
	return filepath.WalkDir(chartDir(), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		_, err = os.ReadFile(path)
		return err
	})
})

// helm runs Helm with args and returns its standard output, or an error
// holding its standard error. A missing Helm fails the test: it never skips.
func helm(t testing.TB, args ...string) (string, error) {
	t.Helper()
	bin, err := helmBinary()
	if err != nil {
		t.Fatalf("no Helm binary: %v", err)
	}
	if err := readChart(); err != nil {
		t.Fatalf("reading the chart: %v", err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	// Helm keeps repositories and plugins under these; the test needs none.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// render is one `helm template` of the chart.
type render struct {
	release   string
	namespace string
	values    map[string]any
	// kubeVersion is the cluster version Helm assumes; empty: Helm's default.
	kubeVersion string
}

// args returns the arguments of `helm template` (or, with lint, of `helm
// lint`), writing the values to a file.
func (r render) args(t testing.TB, lint bool) []string {
	t.Helper()
	args := []string{"template", r.release, chartDir(), "--namespace", r.namespace}
	if lint {
		args = []string{"lint", "--strict", chartDir(), "--namespace", r.namespace}
	}
	if r.values != nil {
		data, err := yaml.Marshal(r.values)
		if err != nil {
			t.Fatalf("encoding values: %v", err)
		}
		file := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--values", file)
	}
	if r.kubeVersion != "" {
		args = append(args, "--kube-version", r.kubeVersion)
	}
	return args
}

// template renders the chart, returning Helm's error (such as a value the
// schema refuses) rather than failing.
func (r render) template(t testing.TB) ([]*unstructured.Unstructured, error) {
	t.Helper()
	out, err := helm(t, r.args(t, false)...)
	if err != nil {
		return nil, err
	}
	objs, err := decodeObjects([]byte(out))
	if err != nil {
		t.Fatalf("decoding the rendered chart: %v\n%s", err, out)
	}
	return objs, nil
}

// mustTemplate renders the chart and fails the test if Helm refuses.
func (r render) mustTemplate(t testing.TB) []*unstructured.Unstructured {
	t.Helper()
	objs, err := r.template(t)
	if err != nil {
		t.Fatalf("rendering the chart: %v", err)
	}
	return objs
}

// decodeObjects splits a multi-document YAML stream into objects, skipping
// documents that hold only comments.
func decodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		jsonDoc, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w\n%s", len(objs)+1, err, doc)
		}
		if string(jsonDoc) == "null" {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(jsonDoc); err != nil {
			return nil, fmt.Errorf("document %d: %w\n%s", len(objs)+1, err, doc)
		}
		objs = append(objs, obj)
	}
}

// find returns the rendered objects of a kind.
func find(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// findOne returns the one rendered object of a kind whose name ends with
// suffix, failing the test when there is not exactly one.
func findOne(t testing.TB, objs []*unstructured.Unstructured, kind, suffix string) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range find(objs, kind) {
		if strings.HasSuffix(o.GetName(), suffix) {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s named *%s, found %d", kind, suffix, len(found))
	}
	return found[0]
}

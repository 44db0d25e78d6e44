package framework

import (
	"context"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestKubeconfigFromAnyDirectory starts a control plane in a relative
// directory, as hack/local-up.sh does by default, and uses its kubeconfig
// from another working directory, as kubectl in a second terminal would.
func TestKubeconfigFromAnyDirectory(t *testing.T) {
	base := t.TempDir()
	t.Chdir(base)
	cp := Start(t, Options{Dir: filepath.Join("_output", "controlplane")})

	t.Chdir(t.TempDir())
	for _, path := range []string{cp.KubeconfigPath, filepath.Join(base, "_output", "controlplane", "kubeconfig")} {
		config, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			t.Fatalf("loading %s from another directory: %v", path, err)
		}
		if _, err := kubernetes.NewForConfigOrDie(config).CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Errorf("using %s from another directory: %v", path, err)
		}
	}
}

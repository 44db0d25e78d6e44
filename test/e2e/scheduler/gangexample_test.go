package scheduler

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/test/framework"
)

// testExampleGang places deploy/examples/gangs as written, but for what
// the webhook would add (tessera-scheduler's name, a GPU count of 1) and a
// node selector for the test's own node.
func testExampleGang(ctx context.Context, t *testing.T, e *env) {
	e.addNode(ctx, t, "gang-example", "gang-example", 10, a100(0))
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "deploy", "examples", "gangs", "podgroup.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var pods []string
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if name := e.createExample(ctx, t, doc); name != "" {
			pods = append(pods, name)
		}
	}
	if len(pods) != 4 {
		t.Fatalf("the example gang has %d pods, want 4", len(pods))
	}
	for _, name := range pods {
		e.waitBound(ctx, t, name)
	}
}

// createExample creates the PodGroup or pod of one document of the
// example in the test's namespace, and returns the pod's name.
func (e *env) createExample(ctx context.Context, t *testing.T, doc []byte) string {
	t.Helper()
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		t.Fatal(err)
	}
	switch meta.Kind {
	case "PodGroup":
		var pg schedulingv1beta1.PodGroup
		if err := yaml.UnmarshalStrict(doc, &pg); err != nil {
			t.Fatal(err)
		}
		pg.Namespace = namespace
		if _, err := e.cp.Kube.SchedulingV1beta1().PodGroups(namespace).Create(ctx, &pg, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating the example's PodGroup: %v", err)
		}
	case "Pod":
		var pod corev1.Pod
		if err := yaml.UnmarshalStrict(doc, &pod); err != nil {
			t.Fatal(err)
		}
		pod.Namespace = namespace
		pod.Spec.SchedulerName = schedulerName
		pod.Spec.NodeSelector = map[string]string{groupLabel: "gang-example"}
		count := gpurequest.DefaultResourceNames().Count
		for i := range pod.Spec.Containers {
			if _, ok := pod.Spec.Containers[i].Resources.Limits[count]; !ok {
				pod.Spec.Containers[i].Resources.Limits[count] = resource.MustParse("1")
			}
		}
		e.createPod(ctx, t, &pod)
		return pod.Name
	default:
		t.Fatalf("the example gang has a %s", meta.Kind)
	}
	return ""
}

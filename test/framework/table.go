package framework

import (
	"context"
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// GetTable returns what `kubectl get` shows for the API path: the Table
// the API server renders from the resource's printer columns.
func GetTable(ctx context.Context, t testing.TB, kube kubernetes.Interface, path string) metav1.Table {
	t.Helper()
	body, err := kube.Discovery().RESTClient().Get().AbsPath(path).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil {
		t.Fatalf("getting the table of %s: %v", path, err)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatalf("decoding the table of %s: %v", path, err)
	}
	return table
}

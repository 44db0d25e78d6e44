package meter

import (
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func TestWritesOf(t *testing.T) {
	text := `# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 40
apiserver_request_total{code="409",component="apiserver",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",group="resource.k8s.io",resource="resourceclaims",scope="resource",subresource="status",verb="PUT",version="v1"} 40
apiserver_request_total{code="200",component="apiserver",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 40
apiserver_request_total{code="200",component="apiserver",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 7
apiserver_request_total{code="200",component="apiserver",group="",resource="pods",scope="namespace",subresource="",verb="WATCH",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",group="",resource="pods",scope="resource",subresource="",verb="GET",version="v1"} 9
`
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	before := APIWrites{"pods/binding": 2, "pods/status": 40}
	got := WritesOf(families).Since(before)
	want := APIWrites{"pods/binding": 40, "resourceclaims/status": 40}
	if len(got) != len(want) || got["pods/binding"] != 40 || got["resourceclaims/status"] != 40 {
		t.Fatalf("writes since before = %v, want %v (reads and unchanged counts left out)", got, want)
	}
	if s := got.PerPod(20); s != "pods/binding 2.00, resourceclaims/status 2.00" {
		t.Errorf("perPod = %q", s)
	}
	if got.Total() != 80 {
		t.Errorf("total = %v, want 80", got.Total())
	}
}

func TestConsistencyChecksOf(t *testing.T) {
	text := `# TYPE apiserver_storage_consistency_checks_total counter
apiserver_storage_consistency_checks_total{group="",resource="pods",status="success"} 2
apiserver_storage_consistency_checks_total{group="",resource="pods",status="error"} 1
apiserver_storage_consistency_checks_total{group="gpu.tessera.dev",resource="gpuallocations",status="success"} 3
`
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	got := ConsistencyChecksOf(families).Since(Counts{"gpuallocations": 3})
	if s := got.String(); s != "pods 3" {
		t.Errorf("checks since before = %q, want pods 3 (every result counted, unchanged resources left out)", s)
	}
}

package meter

import (
	"strings"
	"testing"
)

func TestCountRequests(t *testing.T) {
	line := func(stage, user, verb, resource, sub string) string {
		ref := ""
		if resource != "" {
			ref = `,"objectRef":{"resource":"` + resource + `","subresource":"` + sub + `","namespace":"bench"}`
		}
		return `{"kind":"Event","level":"Metadata","stage":"` + stage + `","verb":"` + verb + `","user":{"username":"` + user + `"}` + ref + `}`
	}
	tests := []struct {
		name      string
		log       string
		wantTotal int
		wantKinds string
	}{
		{
			name: "one event per request, by verb and resource",
			log: strings.Join([]string{
				line("RequestReceived", ExtenderUser, "create", "gpuallocations", ""),
				line("RequestReceived", ExtenderUser, "create", "pods", "binding"),
				line("RequestReceived", ExtenderUser, "create", "pods", "binding"),
				line("RequestReceived", ExtenderUser, "get", "", ""),
			}, "\n"),
			wantTotal: 4,
			wantKinds: "create pods/binding: 2, create gpuallocations: 1, get: 1",
		},
		{
			name: "other users and later stages are not counted",
			log: strings.Join([]string{
				line("RequestReceived", "someone-else", "create", "pods", ""),
				line("ResponseComplete", ExtenderUser, "create", "pods", "binding"),
				line("RequestReceived", ExtenderUser, "watch", "pods", ""),
			}, "\n"),
			wantTotal: 1,
			wantKinds: "watch pods: 1",
		},
		{name: "an empty log counts nothing", log: "", wantTotal: 0, wantKinds: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := countRequests(strings.NewReader(tt.log), ExtenderUser)
			if err != nil {
				t.Fatal(err)
			}
			if got.Total != tt.wantTotal || got.String() != tt.wantKinds {
				t.Errorf("countRequests = %d (%s), want %d (%s)", got.Total, got, tt.wantTotal, tt.wantKinds)
			}
		})
	}
}

func TestCountRequestsNamesTheBadLine(t *testing.T) {
	_, err := countRequests(strings.NewReader("{}\nnot json\n"), ExtenderUser)
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("countRequests = %v, want an error naming line 2", err)
	}
}

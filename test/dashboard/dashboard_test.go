package dashboard

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/tessera-gpu/tessera/test/framework"
)

// panel is the part of a Grafana panel the test reads.
type panel struct {
	ID      int     `json:"id"`
	Type    string  `json:"type"`
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
		RefID        string `json:"refId"`
	} `json:"targets"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
}

type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

func load(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "deploy", "grafana", "tessera-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("decoding the dashboard: %v", err)
	}
	return d
}

// queries returns every PromQL expression of the dashboard: panel targets
// and template variable queries, each with where it is.
func queries(d dashboard) map[string][]string {
	out := map[string][]string{}
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				where := fmt.Sprintf("panel %q target %s", p.Title, tg.RefID)
				out[where] = []string{tg.Expr, tg.LegendFormat}
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(map[string]any); ok {
			out["variable "+v.Name] = []string{fmt.Sprint(q["query"]), ""}
		}
	}
	return out
}

func TestEveryQueriedMetricIsExported(t *testing.T) {
	metrics := Exported(t)
	d := load(t)
	used := map[string]bool{}
	for where, q := range queries(d) {
		expr, legend := q[0], q[1]
		if strings.TrimSpace(expr) == "" {
			t.Errorf("%s has no query", where)
			continue
		}
		if strings.Count(expr, "(") != strings.Count(expr, ")") || strings.Count(expr, "{") != strings.Count(expr, "}") {
			t.Errorf("%s: unbalanced brackets in %s", where, expr)
		}
		names := TesseraName.FindAllString(expr, -1)
		if len(names) == 0 {
			t.Errorf("%s queries no Tessera metric: %s", where, expr)
		}
		labels := map[string]bool{"instance": true, "job": true}
		for _, name := range names {
			family, ok := Resolve(name, metrics)
			if !ok {
				t.Errorf("%s queries %s, which no daemon exports", where, name)
				continue
			}
			used[family] = true
			for _, l := range metrics[family].Labels {
				labels[l] = true
			}
			if metrics[family].Histogram {
				labels["le"] = true
			}
		}
		// A legend or grouping that names a label the metrics lack shows
		// an empty string, not an error, so it is checked here.
		for _, m := range regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`).FindAllStringSubmatch(legend, -1) {
			if !labels[m[1]] {
				t.Errorf("%s: legend %q uses label %q, which none of %v has", where, legend, m[1], names)
			}
		}
		for _, m := range regexp.MustCompile(`\b(?:by|on|without)\s*\(([^)]*)\)`).FindAllStringSubmatch(expr, -1) {
			for _, l := range strings.Split(m[1], ",") {
				if l = strings.TrimSpace(l); l != "" && !labels[l] {
					t.Errorf("%s: groups by label %q, which none of %v has", where, l, names)
				}
			}
		}
	}
	// What an operator looks for: allocation against capacity, per-pod
	// slices, scheduling latency and failures.
	for _, need := range []string{
		"tessera_gpu_memory_capacity_bytes", "tessera_gpu_memory_allocated_bytes",
		"tessera_gpu_cores_capacity", "tessera_gpu_cores_allocated",
		"tessera_allocation_memory_bytes", "tessera_allocation_cores",
		"tessera_extender_request_duration_seconds", "tessera_extender_requests_total",
		"tessera_node_gpu_memory_used_bytes",
		// Each namespace's GPU quota, used against hard.
		"tessera_namespace_gpu_memory_used_bytes", "tessera_namespace_gpu_memory_hard_bytes",
		"tessera_namespace_gpu_cores_used", "tessera_namespace_gpu_cores_hard",
		"tessera_namespace_gpus_used", "tessera_namespace_gpus_hard",
	} {
		if !used[need] {
			t.Errorf("the dashboard never shows %s", need)
		}
	}
	var unused []string
	for name := range metrics {
		if !used[name] {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	t.Logf("exported but not on the dashboard: %v", unused)
}

// TestQuotaRow pins the row of each namespace's GPU quota: every GPU
// resource's used and hard series are shown, and every query takes one
// figure per namespace (the scheduler's replicas each export them) of the
// namespaces the dashboard's variable selects.
func TestQuotaRow(t *testing.T) {
	d := load(t)
	var row []panel
	for i, p := range d.Panels {
		if p.Type == "row" && p.Title == "GPU quota by namespace" {
			for _, q := range d.Panels[i+1:] {
				if q.Type == "row" {
					break
				}
				row = append(row, q)
			}
		}
	}
	if len(row) == 0 {
		t.Fatal(`no panels in a row "GPU quota by namespace"`)
	}
	shown := map[string]bool{}
	for _, p := range row {
		for _, tg := range p.Targets {
			for _, name := range TesseraName.FindAllString(tg.Expr, -1) {
				shown[name] = true
				if !strings.HasPrefix(name, "tessera_namespace_") {
					t.Errorf("panel %q target %s reads %s, not a namespace's quota", p.Title, tg.RefID, name)
				}
				if want := "max by (namespace) (" + name + `{namespace=~"$namespace"}`; !strings.Contains(tg.Expr, want) {
					t.Errorf("panel %q target %s does not read %s as %s...): %s", p.Title, tg.RefID, name, want, tg.Expr)
				}
			}
		}
	}
	for _, name := range []string{
		"tessera_namespace_gpu_memory_used_bytes", "tessera_namespace_gpu_memory_hard_bytes",
		"tessera_namespace_gpu_cores_used", "tessera_namespace_gpu_cores_hard",
		"tessera_namespace_gpus_used", "tessera_namespace_gpus_hard",
	} {
		if !shown[name] {
			t.Errorf("the quota row never shows %s", name)
		}
	}
}

func TestDashboardStructure(t *testing.T) {
	d := load(t)
	if d.Title == "" || d.UID == "" {
		t.Errorf("title %q and uid %q must both be set", d.Title, d.UID)
	}
	ids := map[int]string{}
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if prev, dup := ids[p.ID]; dup {
				t.Errorf("panels %q and %q share id %d", prev, p.Title, p.ID)
			}
			ids[p.ID] = p.Title
			if p.Type != "row" {
				// The data source is a dashboard variable, so the import
				// works whatever the Prometheus data source is called.
				if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
					t.Errorf("panel %q does not use the ${datasource} variable", p.Title)
				}
				if len(p.Targets) == 0 {
					t.Errorf("panel %q has no query", p.Title)
				}
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	if len(ids) < 10 {
		t.Errorf("only %d panels", len(ids))
	}
}

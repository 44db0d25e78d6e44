package version

import (
	"bytes"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/spf13/pflag"
)

func TestFlag(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		printed bool
	}{
		{"given", []string{"--version"}, true},
		{"not given", []string{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			f := AddFlag(fs, "tessera-test")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if got := f.Printed(&out); got != tc.printed {
				t.Fatalf("Printed = %v, want %v", got, tc.printed)
			}
			want := ""
			if tc.printed {
				want = "tessera-test " + Get().String() + "\n"
			}
			if out.String() != want {
				t.Errorf("printed %q, want %q", out.String(), want)
			}
		})
	}
}

func TestBuildInfoMetric(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector("extender"))
	i := Get()
	want := `# HELP tessera_build_info Always 1; the labels say which build of which Tessera component is running.
# TYPE tessera_build_info gauge
tessera_build_info{build_date="` + i.BuildDate + `",component="extender",goversion="` + i.GoVersion + `",platform="` + i.Platform + `",revision="` + i.GitCommit + `",version="` + i.Version + `"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "tessera_build_info"); err != nil {
		t.Error(err)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

package doclinks

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestBroken(t *testing.T) {
	root := t.TempDir()
	for path, content := range map[string]string{
		"README.md": "# Top\n[ok](docs/a.md#part-one) [dir](docs) [self](#top)\n[gone](docs/b.md) [no anchor](docs/a.md#part-two) [no self](#bottom)\n[out](../x.md) [code](main.go#L3)\n",
		"docs/a.md": "# A\n## Part one\n[up](../README.md#top) [up wrong](../README.md#tessera)\n",
		"main.go":   "package main\n",
	} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, path), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		page string
		want []string
	}{
		{page: "README.md", want: []string{
			"README.md:3: docs/b.md: no such file",
			"README.md:3: docs/a.md#part-two: docs/a.md has no heading with anchor #part-two",
			"README.md:3: #bottom: README.md has no heading with anchor #bottom",
			"README.md:4: ../x.md: points outside the repository",
		}},
		{page: "docs/a.md", want: []string{
			"docs/a.md:3: ../README.md#tessera: README.md has no heading with anchor #tessera",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.page, func(t *testing.T) {
			got, err := Broken(root, tc.page)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Broken(%s) =\n%q\nwant\n%q", tc.page, got, tc.want)
			}
		})
	}
}

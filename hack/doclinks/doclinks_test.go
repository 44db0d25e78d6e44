package doclinks

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepositoryLinks checks every relative link of every Markdown page of
// the repository: README.md, docs/ and the pages beside the deployment
// files.
func TestRepositoryLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	var pages []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if d.IsDir() && rel != "." && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			pages = append(pages, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"README.md", filepath.Join("docs", "README.md"), filepath.Join("deploy", "examples", "README.md")} {
		if !contains(pages, want) {
			t.Errorf("%s not found among the pages checked", want)
		}
	}
	for _, page := range pages {
		broken, err := Broken(root, page)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range broken {
			t.Error(b)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

package doclinks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Broken reads the page at path (relative to root) and returns one line for
// each of its relative links that names a missing file, leaves the
// repository, or names an anchor its page lacks. Anchors are checked in
// Markdown pages only.
func Broken(root, path string) ([]string, error) {
	page, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return nil, err
	}
	var broken []string
	for _, l := range RelativeLinks(string(page)) {
		if problem := check(root, path, string(page), l); problem != "" {
			broken = append(broken, fmt.Sprintf("%s:%d: %s: %s", path, l.Line, l.Target, problem))
		}
	}
	return broken, nil
}

func check(root, path, page string, l Link) string {
	target := path
	if l.File != "" {
		target = filepath.Join(filepath.Dir(path), filepath.FromSlash(l.File))
		if target == ".." || strings.HasPrefix(target, ".."+string(filepath.Separator)) {
			return "points outside the repository"
		}
		info, err := os.Stat(filepath.Join(root, target))
		if errors.Is(err, fs.ErrNotExist) {
			return "no such file"
		}
		if err != nil {
			return err.Error()
		}
		if info.IsDir() || l.Anchor == "" || !strings.HasSuffix(target, ".md") {
			return ""
		}
		content, err := os.ReadFile(filepath.Join(root, target))
		if err != nil {
			return err.Error()
		}
		page = string(content)
	}
	if l.Anchor != "" && !Anchors(page)[l.Anchor] {
		return fmt.Sprintf("%s has no heading with anchor #%s", filepath.ToSlash(target), l.Anchor)
	}
	return ""
}

// Package atomicfile replaces a file so that a reader, and after a crash
// the writer itself, finds the old content or the new, never a part; and
// so that what a crash leaves behind is known by its name.
//
// The content goes to a temporary file beside the target, named after it
// (name.<random>.tmp), which is renamed over the target. A writer killed
// before the rename leaves that temporary file, which RemoveStale removes
// at its next start: a name of the writer's own, where a name shared by
// every writer to the directory (the CDI library's spec.<random>.tmp, say)
// could be another's write in progress.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// tempSuffix ends a temporary file's name.
const tempSuffix = ".tmp"

// Write replaces the file at path with data, with the permissions perm,
// synced to disk before the rename. check, when not nil, is given the
// temporary file's path once it holds data; an error from it leaves path
// as it was. No temporary file is left unless the process dies.
func Write(path string, data []byte, perm os.FileMode, check func(tmp string) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*"+tempSuffix)
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	err = errors.Join(err, tmp.Close())
	if err == nil && check != nil {
		err = check(tmp.Name())
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// RemoveStale removes the temporary files that writes of path left when
// their process died before renaming them, and names those it removed.
// Call it before the process writes path again, never while another
// writer of path may be writing.
func RemoveStale(path string) ([]string, error) {
	dir, base := filepath.Split(path)
	entries, err := os.ReadDir(filepath.Clean(dir))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, base+".") || !strings.HasSuffix(name, tempSuffix) || len(name) <= len(base)+len(tempSuffix)+1 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing the unfinished write %s: %w", name, err))
			continue
		}
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}

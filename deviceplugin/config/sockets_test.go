package config

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// TestMaxSocketPath binds Unix sockets at paths of MaxSocketPath bytes and
// one more: the first must bind, the second must not, or the check that
// refuses long socket directories refuses the wrong ones.
func TestMaxSocketPath(t *testing.T) {
	dir := t.TempDir()
	at := func(length int) string {
		base := filepath.Join(dir, "s")
		return base + strings.Repeat("x", length-len(base))
	}
	l, err := net.Listen("unix", at(MaxSocketPath))
	if err != nil {
		t.Fatalf("binding a socket at a path of %d bytes: %v", MaxSocketPath, err)
	}
	l.Close()
	if l, err := net.Listen("unix", at(MaxSocketPath+1)); err == nil {
		l.Close()
		t.Fatalf("a socket bound at a path of %d bytes; MaxSocketPath is too small", MaxSocketPath+1)
	}
}

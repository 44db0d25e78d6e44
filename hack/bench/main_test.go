package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

func TestRunRefusesBadFlags(t *testing.T) {
	err := run(context.Background(), []string{"--nodes=0"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--nodes=0: must be from 1 to 20000") {
		t.Fatalf("run = %v, want an error naming --nodes and its limit", err)
	}
}

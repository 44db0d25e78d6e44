package framework

import (
	"testing"

	"tags.cncf.io/container-device-interface/pkg/cdi"
)

// CDIRuntimeView reads a CDI spec directory as a container runtime does,
// failing the test if the runtime would report any spec error.
func CDIRuntimeView(t testing.TB, dir string) *cdi.Cache {
	t.Helper()
	cache, err := cdi.NewCache(cdi.WithSpecDirs(dir), cdi.WithAutoRefresh(false))
	if err != nil {
		t.Fatal(err)
	}
	if errs := cache.GetErrors(); len(errs) > 0 {
		t.Fatalf("the runtime's CDI cache reports %v", errs)
	}
	return cache
}

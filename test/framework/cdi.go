package framework

import (
	"fmt"
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

// CDIEnv is the environment a container given the CDI devices ids gets
// from them, resolved through cache as a container runtime resolves them;
// a device the runtime does not find is an error naming those it has.
func CDIEnv(cache *cdi.Cache, ids []string) ([]string, error) {
	var env []string
	for _, id := range ids {
		dev := cache.GetDevice(id)
		if dev == nil {
			return nil, fmt.Errorf("CDI device %s, which the runtime does not find (it has %v)", id, cache.ListDevices())
		}
		env = append(env, dev.ContainerEdits.Env...)
	}
	return env, nil
}

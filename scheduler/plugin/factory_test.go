package plugin

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
)

// profileHandle is the framework handle of one profile; only its name is
// read.
type profileHandle struct {
	fwk.Handle
	name string
}

func (h profileHandle) ProfileName() string { return h.name }

func TestFactoryRefusesASecondProfile(t *testing.T) {
	var builds []string
	factory := onlyOneProfile(func(_ context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		builds = append(builds, h.ProfileName())
		return &Plugin{}, nil
	})
	ctx := context.Background()
	if _, err := factory(ctx, nil, profileHandle{name: "gpu-scheduler"}); err != nil {
		t.Fatalf("the first profile: %v", err)
	}
	_, err := factory(ctx, nil, profileHandle{name: "gpu-scheduler-batch"})
	if err == nil || !strings.Contains(err.Error(), `profiles "gpu-scheduler" and "gpu-scheduler-batch" both enable the Tessera plugin`) {
		t.Errorf("the second profile: got error %v, want a refusal naming both profiles", err)
	}
	if len(builds) != 1 {
		t.Errorf("built the plugin for profiles %q, want the first only", builds)
	}
}

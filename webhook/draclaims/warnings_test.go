package draclaims

import (
	"reflect"
	"testing"

	"github.com/tessera-gpu/tessera/gpurequest"
)

func TestWarnings(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		sel         gpurequest.Selection
		want        []string
	}{
		{name: "no policy, no warning"},
		{name: "the node policy holds under tessera-scheduler only", sel: gpurequest.Selection{NodePolicy: gpurequest.Spread},
			want: []string{"tessera.dev/node-policy=spread holds in DRA mode only where tessera-scheduler schedules the pod: stock kube-scheduler scores no devices"}},
		{name: "the GPU policy never holds", sel: gpurequest.Selection{GPUPolicy: gpurequest.Binpack},
			annotations: map[string]string{"tessera.dev/gpu-policy": "binpack"},
			want:        []string{"tessera.dev/gpu-policy=binpack has no effect in DRA mode: kube-scheduler allocates the first GPU of the node that fits"}},
		{name: "named by the HAMi key the pod wrote", sel: gpurequest.Selection{NodePolicy: gpurequest.Binpack, GPUPolicy: gpurequest.Spread},
			annotations: map[string]string{"hami.io/node-scheduler-policy": "binpack", "hami.io/gpu-scheduler-policy": "spread"},
			want: []string{"hami.io/node-scheduler-policy=binpack holds in DRA mode only where tessera-scheduler schedules the pod: stock kube-scheduler scores no devices",
				"hami.io/gpu-scheduler-policy=spread has no effect in DRA mode: kube-scheduler allocates the first GPU of the node that fits"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Warnings(tc.annotations, tc.sel); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

package harness

import (
	"slices"
	"strings"
	"testing"
)

func TestGangOptions(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantPods  int
		wantSizes []int
		wantErr   string
	}{
		{name: "gangs mode runs gangs of 8 and 32 on 2048 pods by default", args: []string{"--mode=gangs"}, wantPods: gangPods, wantSizes: []int{8, 32}},
		{name: "gangs mode keeps the pods and sizes asked for", args: []string{"--mode=gangs", "--pods=64", "--gang-sizes=4,16"}, wantPods: 64, wantSizes: []int{4, 16}},
		{name: "a size that does not divide the pods", args: []string{"--mode=gangs", "--pods=100", "--gang-sizes=8"}, wantErr: "--gang-sizes=8: 8 does not divide --pods=100"},
		{name: "a gang of one is no gang", args: []string{"--mode=gangs", "--gang-sizes=8,1"}, wantErr: "--gang-sizes=8,1: 1 must be from 2 to 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := completedOptions(t, tt.args)
			err := o.Validate()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Validate = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if !slices.Equal(o.Rows, []string{RowPlugin}) || o.Pods != tt.wantPods || !slices.Equal(o.Gangs.Sizes, tt.wantSizes) {
				t.Errorf("rows %v, %d pods in gangs of %v; want row d, %d pods in gangs of %v", o.Rows, o.Pods, o.Gangs.Sizes, tt.wantPods, tt.wantSizes)
			}
		})
	}
}

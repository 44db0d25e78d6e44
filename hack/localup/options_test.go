package main

import (
	"strings"
	"testing"
)

func TestCompleteScheduler(t *testing.T) {
	tests := []struct {
		name, mode, scheduler string
		want, wantErr         string
		// wantGangs: the Workload API is on.
		wantGangs bool
	}{
		{name: "extender mode defaults to the extender", mode: modeExtender, want: schedulerExtender},
		{name: "extender mode with tessera-scheduler serves gangs", mode: modeExtender, scheduler: schedulerPlugin, want: schedulerPlugin, wantGangs: true},
		{name: "DRA mode defaults to tessera-scheduler", mode: modeDRA, want: schedulerPlugin},
		{name: "DRA mode with stock kube-scheduler", mode: modeDRA, scheduler: schedulerStock, want: schedulerStock},
		{name: "no extender in DRA mode", mode: modeDRA, scheduler: schedulerExtender, wantErr: "--scheduler=extender: with --mode=dra want plugin or stock"},
		{name: "stock kube-scheduler needs DRA mode", mode: modeExtender, scheduler: schedulerStock, wantErr: "--scheduler=stock: with --mode=extender want extender or plugin"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := options{mode: tc.mode, scheduler: tc.scheduler}
			err := o.complete()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.scheduler != tc.want {
				t.Errorf("scheduler %q, want %q", o.scheduler, tc.want)
			}
			if o.gangs() != tc.wantGangs {
				t.Errorf("Workload API on: %t, want %t", o.gangs(), tc.wantGangs)
			}
		})
	}
}

package view

import (
	"testing"
	"time"
)

func TestRoughly(t *testing.T) {
	tests := []struct {
		name string
		in   time.Duration
		want time.Duration
	}{
		{name: "under a minute keeps the seconds", in: 42*time.Second + 300*time.Millisecond, want: 42 * time.Second},
		{name: "past a minute keeps the minutes", in: 3*time.Minute + 17*time.Second, want: 3 * time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := roughly(tc.in); got != tc.want {
				t.Errorf("roughly(%s) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

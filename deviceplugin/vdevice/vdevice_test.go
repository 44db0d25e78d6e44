package vdevice

import (
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		id   string
		uuid string
		n    int
		ok   bool
	}{
		{name: "made by ID", id: ID("GPU-1", 7), uuid: "GPU-1", n: 7, ok: true},
		{name: "no separator", id: "GPU-1"},
		{name: "no number", id: "GPU-1::"},
		{name: "negative number", id: "GPU-1::-1"},
		{name: "no UUID", id: "::1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			uuid, n, ok := Parse(tt.id)
			if uuid != tt.uuid || n != tt.n || ok != tt.ok {
				t.Errorf("Parse(%q) = %q, %d, %v; want %q, %d, %v", tt.id, uuid, n, ok, tt.uuid, tt.n, tt.ok)
			}
		})
	}
}

func TestSortIsNumeric(t *testing.T) {
	ids := []string{"b::0", "foreign", "a::10", "a::2"}
	Sort(ids)
	if want := []string{"a::2", "a::10", "b::0", "foreign"}; !slices.Equal(ids, want) {
		t.Errorf("Sort = %v, want %v", ids, want)
	}
}

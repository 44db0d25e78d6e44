package meter

import "testing"

func TestCountsString(t *testing.T) {
	c := Counts{"pods": 1, "gpuallocations": 2, "leases": 1}.Since(Counts{"leases": 1})
	if s := c.String(); s != "gpuallocations 2, pods 1" {
		t.Errorf("String() = %q, want the counts since before, the most first", s)
	}
}

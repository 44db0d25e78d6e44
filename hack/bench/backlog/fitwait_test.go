package backlog

import (
	"testing"
	"time"
)

func TestFitWaitMonitor(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	type change struct {
		node      string
		at        int
		fits, bnd bool
	}
	tests := []struct {
		name        string
		changes     []change
		end         int
		wantLongest time.Duration
		wantNode    string
		wantOpen    bool
		wantWaits   int
		wantOver    int
	}{
		{name: "nothing fits: no wait", changes: []change{{"n1", 1, false, false}}, end: 10},
		{name: "a free that fits opens a wait a bind there ends",
			changes: []change{{"n1", 1, true, false}, {"n1", 4, false, true}}, end: 10,
			wantLongest: 3 * time.Second, wantNode: "n1", wantWaits: 1},
		{name: "a second free on an open node does not restart the wait",
			changes: []change{{"n1", 1, true, false}, {"n1", 3, true, false}, {"n1", 4, false, true}}, end: 10,
			wantLongest: 3 * time.Second, wantNode: "n1", wantWaits: 1},
		{name: "a bind that leaves room that fits starts a new wait",
			changes: []change{{"n1", 1, true, false}, {"n1", 2, true, true}, {"n1", 8, false, true}}, end: 10,
			wantLongest: 6 * time.Second, wantNode: "n1", wantWaits: 2, wantOver: 1},
		{name: "a bind elsewhere that leaves nothing fitting ends the wait",
			changes: []change{{"n1", 1, true, false}, {"n1", 2, false, false}}, end: 10,
			wantLongest: time.Second, wantNode: "n1", wantWaits: 1},
		{name: "a wait open at the end counts to the end, as a lower bound",
			changes: []change{{"n1", 1, true, false}, {"n2", 2, true, false}, {"n2", 3, false, true}}, end: 10,
			wantLongest: 9 * time.Second, wantNode: "n1", wantOpen: true, wantWaits: 2, wantOver: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newFitWaitMonitor()
			for _, c := range tt.changes {
				m.changed(c.node, at(c.at), c.fits, c.bnd)
			}
			m.end(at(tt.end))
			if m.Longest != tt.wantLongest || m.LongestNode != tt.wantNode || m.OpenAtEnd != tt.wantOpen || m.Waits != tt.wantWaits || m.Over != tt.wantOver {
				t.Errorf("got %+v, want longest %s on %q (open %v), %d waits, %d over the target", m.fitWaits, tt.wantLongest, tt.wantNode, tt.wantOpen, tt.wantWaits, tt.wantOver)
			}
			if len(m.Long) != tt.wantOver || tt.wantOver > 0 && (m.Long[0].Length != tt.wantLongest || m.Long[0].Node != tt.wantNode) {
				t.Errorf("long waits %+v, want %d, the first %s on %q", m.Long, tt.wantOver, tt.wantLongest, tt.wantNode)
			}
		})
	}
}

func TestFitWaitMonitorRestart(t *testing.T) {
	t0 := time.Unix(1000, 0)
	m := newFitWaitMonitor()
	m.changed("n1", t0, true, false)
	m.changed("n2", t0, true, false)
	m.changed("n2", t0.Add(time.Second), false, true)
	// The window begins: the open wait counts from here, the ended one not at all.
	m.restart(t0.Add(5 * time.Second))
	m.changed("n1", t0.Add(7*time.Second), false, true)
	m.end(t0.Add(10 * time.Second))
	if m.Longest != 2*time.Second || m.Waits != 1 || m.OpenAtEnd {
		t.Errorf("got %+v, want one wait of 2s", m.fitWaits)
	}
}

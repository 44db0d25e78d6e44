package view

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

func TestRulesClosed(t *testing.T) {
	renewedAt := func(at time.Time) *atomic.Int64 {
		var ns atomic.Int64
		ns.Store(at.UnixNano())
		return &ns
	}
	live := func(noHAMiCore string) *Node {
		return &Node{HasGPUNode: true, NoHAMiCore: noHAMiCore, renewed: renewedAt(now)}
	}
	slice := &placement.Request{Containers: []gpurequest.ContainerRequest{{Name: "main", Count: 1, MemoryMiB: 1000}}}
	whole := &placement.Request{Containers: []gpurequest.ContainerRequest{{Name: "main", Count: 1}}}
	tests := []struct {
		name        string
		node        *Node
		policy      HAMiCorePolicy
		req         *placement.Request
		wantClosed  string
		wantWarning string
	}{
		{name: "a live node with HAMi-core is open", node: live(""), req: slice},
		{name: "a node the view does not know is closed", node: nil, req: slice, wantClosed: "no GPUNode"},
		{name: "a stale heartbeat closes the node before HAMi-core is looked at",
			node:   &Node{HasGPUNode: true, NoHAMiCore: "no libvgpu.so", renewed: renewedAt(now.Add(-time.Hour))},
			policy: HAMiCoreWarn, req: slice, wantClosed: "heartbeat is stale"},
		{name: "slices without HAMi-core are refused by default", node: live("no libvgpu.so"), req: slice, wantClosed: "no libvgpu.so"},
		{name: "slices without HAMi-core are refused under Refuse", node: live("no libvgpu.so"), policy: HAMiCoreRefuse, req: slice, wantClosed: "no libvgpu.so"},
		{name: "slices without HAMi-core pass with a warning under Warn", node: live("no libvgpu.so"), policy: HAMiCoreWarn, req: slice, wantWarning: "no libvgpu.so"},
		{name: "a whole GPU needs no HAMi-core", node: live("no libvgpu.so"), req: whole},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Rules{HeartbeatMaxAge: time.Minute, HAMiCoreMissing: tc.policy}
			closed, warning := r.Closed(tc.node, now, tc.req)
			for _, c := range []struct {
				what      string
				got       Reason
				wantWords string
			}{{"closed", closed, tc.wantClosed}, {"warning", warning, tc.wantWarning}} {
				if c.got.OK() != (c.wantWords == "") || !strings.Contains(string(c.got), c.wantWords) {
					t.Errorf("%s = %q, want one saying %q", c.what, c.got, c.wantWords)
				}
			}
		})
	}
}

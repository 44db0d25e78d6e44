package plugin

import (
	"context"
	"testing"

	fwk "k8s.io/kube-scheduler/framework"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/quota"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// TestGangPodPlacedInHeldRoom pins that the plugin places a pod carrying
// its gang's key (gpuv1alpha1.GangHoldAnnotation) in the room held for it,
// which it keeps from every other pod, that Reserve takes the hold, and
// that Unreserve (Permit, PreBind or the binding failed) gives it back.
func TestGangPodPlacedInHeldRoom(t *testing.T) {
	p, v, _ := newTestPlugin(t)
	ctx := context.Background()
	place(v, gpuPod("other", 15360), "GPU-1", 15360)
	member := gpuPod("member", 15360)
	req, err := p.parser.Parse(member)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.HoldGang("w/main", "default", "w", nil, []view.GangMember{{Request: req.Request, Policy: req.NodePolicy}}, p.rules, quota.Limits{}, p.clock.Now()); err != nil {
		t.Fatal(err)
	}

	stranger := gpuPod("stranger", 15360)
	// Unresolvable: no pod of lower priority runs on the node.
	wantCode(t, "Filter a pod outside the gang", p.Filter(ctx, preFilter(t, p, stranger), stranger, nodeInfo()), fwk.UnschedulableAndUnresolvable)

	member.Annotations = map[string]string{gpuv1alpha1.GangHoldAnnotation: "w/main"}
	state := preFilter(t, p, member)
	wantCode(t, "Filter the gang's pod", p.Filter(ctx, state, member, nodeInfo()), fwk.Success)
	wantCode(t, "Reserve the gang's pod", p.Reserve(ctx, state, member, node), fwk.Success)
	if got := v.GangHeld("w/main"); got != 1 {
		t.Errorf("while the gang's pod binds, room is held for %d pods, want its own", got)
	}
	p.Unreserve(ctx, state, member, node)
	if got := v.GangHeld("w/main"); got != 1 {
		t.Errorf("after the gang's pod was unreserved, room is held for %d pods, want 1", got)
	}
	wantCode(t, "Filter a pod outside the gang after Unreserve", p.Filter(ctx, preFilter(t, p, stranger), stranger, nodeInfo()), fwk.UnschedulableAndUnresolvable)
}

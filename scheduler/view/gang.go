package view

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/quota"
)

// A gang is room held on the GPUs for pods that do not exist yet: the
// pods of a Kueue workload that the gang-fit admission check
// (scheduler/gangfit) let in because all of them fit. Each hold is a Pod
// of the view with a UID of its own and Gang set, so every other pod, every
// quota count and the published free memory see the room as taken. A pod
// of the gang (JoinGang) is placed as if the hold on the node it is tried
// on were free, and its reservation takes that hold's place; a pod placed
// where the gang holds nothing gives up one of the gang's holds instead,
// so a gang never holds room for more pods than it still has to place.
type gang struct {
	// held are the holds no pod of the gang has taken yet, by node.
	held map[string][]*Pod
	// count is how many holds are in held.
	count int
	// members are the UIDs of the gang's pods seen so far.
	members map[types.UID]struct{}
	// reserved are the UIDs of the members that took a hold with a bind
	// not yet seen made (Bound): their room, in a reservation or the
	// allocation that replaced it, comes back to the gang should the bind
	// fail (see giveBack), so the gang still counts it.
	reserved map[types.UID]struct{}
	// namespace and owners are the Workload's namespace and the UIDs of
	// its owners: only pods there, and with a controller among them if
	// they have one, are the gang's (see JoinGang).
	namespace string
	owners    []types.UID
}

// GangMember is one pod a gang holds room for: its GPU request and its
// node policy, as podrequest.Parser reads them from the pod's template.
type GangMember struct {
	Request *placement.Request
	Policy  gpurequest.Policy
	// Eligible says whether the pod could run on the node at all, by its
	// node selection and tolerations and those of the flavor Kueue
	// assigned it; nil allows every node.
	Eligible func(node string) bool
}

// GangUnfitError says that a gang's member fits none of the nodes' GPUs
// beside the holds of the members placed before it.
type GangUnfitError struct {
	// Member is the index of the member that fits nowhere.
	Member int
	// Never is true when it would fit no node even with every GPU free:
	// the gang can never be placed on the cluster's GPUs as they are.
	Never bool
	// Quota is why the namespace's GPU quota turned the member away on
	// nodes where its GPUs fit, if it did.
	Quota Reason
}

func (e *GangUnfitError) Error() string {
	switch {
	case e.Never:
		return fmt.Sprintf("pod %d fits no node's GPUs even with every GPU free", e.Member+1)
	case !e.Quota.OK():
		return fmt.Sprintf("pod %d does not fit the GPU quota: %s", e.Member+1, e.Quota)
	case e.Member == 0:
		return "pod 1 fits no node's GPUs as they are now"
	default:
		return fmt.Sprintf("pod %d fits no node's GPUs as they are now, beside the %d before it", e.Member+1, e.Member)
	}
}

// HoldGang places the gang's members on the nodes as they are now, one
// after another, each on the node its policy ranks best among those the
// rules leave open and the namespace's limits allow, with the members
// before it counted; and holds that room, all of it or none, under one
// lock, so two gangs held at once never count the same room. A member
// that fits nowhere makes it hold nothing and return a *GangUnfitError.
// It returns the node of each member's hold. A gang held before under
// the same key is released first. Owners are the UIDs of the owners of
// the gang's Workload.
func (v *View) HoldGang(key, namespace, name string, owners []types.UID, members []GangMember, rules Rules, limits quota.Limits, now time.Time) ([]string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.releaseGang(key)
	names := make([]string, 0, len(v.nodes))
	for name, n := range v.nodes {
		if n.HasGPUNode {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	g := &gang{held: map[string][]*Pod{}, members: map[types.UID]struct{}{}, reserved: map[types.UID]struct{}{}, namespace: namespace, owners: owners}
	nodes := make([]string, len(members))
	var ft placement.Fitter
	for i, m := range members {
		best, why := v.bestNode(&ft, names, m, rules, limits, namespace, now)
		if best == nil {
			for _, held := range g.held {
				for _, p := range held {
					v.release(p.UID)
				}
			}
			return nil, &GangUnfitError{Member: i, Never: !v.fitsEmpty(names, m), Quota: why}
		}
		containers, _ := placement.Fit(&best.Placement, m.Request)
		p := newPod(types.UID(fmt.Sprintf("gang/%s/%d", key, i)), namespace, name, best.Placement.Name, containers, now, false)
		p.Gang = key
		v.add(p)
		g.held[p.Node] = append(g.held[p.Node], p)
		g.count++
		nodes[i] = p.Node
	}
	if v.gangs == nil {
		v.gangs, v.members = map[string]*gang{}, map[types.UID]*gang{}
	}
	v.gangs[key] = g
	return nodes, nil
}

// bestNode returns the node of names that the policy of m ranks best for
// it, or nil and, when the quota turned a node away, why.
func (v *View) bestNode(ft *placement.Fitter, names []string, m GangMember, rules Rules, limits quota.Limits, namespace string, now time.Time) (*Node, Reason) {
	var best *Node
	var bestLoad float64
	var turnedAway Reason
	used := v.usage.get(namespace)
	for _, name := range names {
		n := v.nodes[name]
		if !m.eligible(name) {
			continue
		}
		if closed, _ := rules.Closed(n, now, m.Request); !closed.OK() {
			continue
		}
		load, ok := ft.Load(&n.Placement, m.Request)
		if !ok {
			continue
		}
		if limits.Enforced() {
			asked, _ := ft.Use(&n.Placement, m.Request)
			if why := limits.Exceeded(namespace, used, asked); why != "" {
				turnedAway = Reason(why)
				continue
			}
		}
		better := load > bestLoad
		if m.Policy == gpurequest.Spread {
			better = load < bestLoad
		}
		if best == nil || better {
			best, bestLoad = n, load
		}
	}
	return best, turnedAway
}

// fitsEmpty reports whether m fits one of the named nodes it may run on
// with all of the node's GPUs free.
func (v *View) fitsEmpty(names []string, m GangMember) bool {
	var ft placement.Fitter
	all := func(types.UID) bool { return true }
	for _, name := range names {
		if m.eligible(name) && ft.Feasible(v.nodes[name].Without(all), m.Request, nil) {
			return true
		}
	}
	return false
}

// eligible reports whether the member may run on the node at all.
func (m GangMember) eligible(node string) bool { return m.Eligible == nil || m.Eligible(node) }

// ReleaseGang frees what is left of the gang's holds and forgets the gang.
// It returns the nodes where room was freed.
func (v *View) ReleaseGang(key string) []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.releaseGang(key)
}

func (v *View) releaseGang(key string) []string {
	g, ok := v.gangs[key]
	if !ok {
		return nil
	}
	var nodes []string
	for node, held := range g.held {
		for _, p := range held {
			v.release(p.UID)
		}
		nodes = append(nodes, node)
	}
	for uid := range g.members {
		delete(v.members, uid)
	}
	delete(v.gangs, key)
	slices.Sort(nodes)
	return nodes
}

// JoinGang records that the pod is one of the gang its
// gpuv1alpha1.GangHoldAnnotation names, so that it is placed in the
// gang's held room: the front ends call it before they place the pod. A
// Workload's UID shows on its pods, so the annotation is honoured only
// on a pod of the gang's namespace whose controller, if it has one, is
// one of the Workload's owners: a pod elsewhere that copied it would
// take the room and be charged for it to its own namespace's quota. It
// does nothing when the pod has no such annotation, the view holds no
// room for the gang (never held, released, or all taken), or it already
// knows the pod.
func (v *View) JoinGang(pod *corev1.Pod) {
	key := pod.Annotations[gpuv1alpha1.GangHoldAnnotation]
	if key == "" {
		return
	}
	uid := pod.UID
	v.mu.RLock()
	g, held := v.gangs[key]
	_, known := v.members[uid]
	v.mu.RUnlock()
	if !held || known || !g.admits(pod) {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	g, held = v.gangs[key]
	if !held || g.count == 0 || !g.admits(pod) {
		return
	}
	if p, ok := v.pods[uid]; ok && p.gang == g {
		// It took one of the gang's holds with a bind not yet seen made.
		return
	}
	g.members[uid] = struct{}{}
	v.members[uid] = g
}

// admits reports whether the pod may be one of the gang's.
func (g *gang) admits(pod *corev1.Pod) bool {
	if pod.Namespace != g.namespace {
		return false
	}
	owner := metav1.GetControllerOfNoCopy(pod)
	return owner == nil || slices.Contains(g.owners, owner.UID)
}

// GangHeld returns how many pods' room the gang still holds: in holds, or
// in the reservations of members whose binds have not ended.
func (v *View) GangHeld(key string) int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if g, ok := v.gangs[key]; ok {
		return g.count + len(g.reserved)
	}
	return 0
}

// heldFor returns the hold that the pod may take on the node: one of its
// gang's there. It runs under the view's lock.
func (v *View) heldFor(uid types.UID, node string) *Pod {
	return v.members[uid].on(node)
}

// on returns one of the gang's holds on the node; nil when it has none
// there, or g is nil.
func (g *gang) on(node string) *Pod {
	if g == nil {
		return nil
	}
	if held := g.held[node]; len(held) > 0 {
		return held[len(held)-1]
	}
	return nil
}

// anyHeldFor returns one hold of the pod's gang, on any node, or nil.
func (v *View) anyHeldFor(uid types.UID) *Pod {
	g, ok := v.members[uid]
	if !ok {
		return nil
	}
	return v.anyHeldIn(g)
}

// takeHold is a member's placement taking held's place, or when held is
// nil, taking one hold of its gang anywhere: either way the gang holds
// room for one pod fewer, and the pod leaves it. It returns the hold
// taken, nil when none was. It runs under the view's write lock.
func (v *View) takeHold(uid types.UID, held *Pod) *Pod {
	g, ok := v.members[uid]
	if !ok {
		return nil
	}
	delete(g.members, uid)
	delete(v.members, uid)
	if held == nil {
		held = v.anyHeldIn(g)
	}
	if held == nil {
		return nil
	}
	list := g.held[held.Node]
	i := slices.Index(list, held)
	if i < 0 {
		return nil
	}
	if list = slices.Delete(list, i, i+1); len(list) == 0 {
		delete(g.held, held.Node)
	} else {
		g.held[held.Node] = list
	}
	g.count--
	v.release(held.UID)
	return held
}

// giveBack returns to its gang the room of a member whose bind took a hold
// and was not seen made (Bound), when that room is freed: the bind failed,
// or the pod went before it was bound. The member rejoins the gang, to
// take it again. The hold comes back as the room the member had, which
// the release has just freed, so the room is neither left to whoever asks
// next nor counted twice, even when the hold taken was on another node
// and that room has been taken since. Nothing comes back to a gang
// released or held again since. It runs under the view's write lock.
func (v *View) giveBack(r *Pod) {
	g := r.gang
	if g == nil || v.gangs[r.took.Gang] != g {
		return
	}
	delete(g.reserved, r.UID)
	hold := newPod(r.took.UID, r.took.Namespace, r.took.Name, r.Node, r.Containers, r.took.Since, false)
	hold.Gang = r.took.Gang
	v.add(hold)
	g.held[hold.Node] = append(g.held[hold.Node], hold)
	g.count++
	g.members[r.UID] = struct{}{}
	v.members[r.UID] = g
}

// Bound records that the pod's binding was made: the room it took from its
// gang, if any, is its own for good.
func (v *View) Bound(uid types.UID) {
	v.mu.Lock()
	defer v.mu.Unlock()
	p, ok := v.pods[uid]
	if !ok || p.gang == nil {
		return
	}
	delete(p.gang.reserved, uid)
	p.took, p.gang = nil, nil
}

// anyHeldIn returns one of the gang's holds, or nil.
func (v *View) anyHeldIn(g *gang) *Pod {
	for _, held := range g.held {
		if len(held) > 0 {
			return held[len(held)-1]
		}
	}
	return nil
}

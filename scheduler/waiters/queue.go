package waiters

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/scheduler/fitgate"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/preemption"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// Queue activates the waiting GPU pods that GPUs freed on a node could
// serve, and no others: under a backlog of thousands of pods, retrying
// every one whenever any GPU frees costs thousands of scheduling cycles per
// finished pod. It plays what kube-scheduler would do with the node: it
// walks the waiting pods in queue order (priority, then age), fits each on
// the node with placement's rules, and activates those that fit, each
// taking its room, until nothing more fits.
//
// The tracker tells the Queue whenever GPUs may have freed on a node,
// once its view holds the change (Freed). A pod is remembered from the
// start of its first scheduling cycle (Waiting), or from when the fit
// gate first asks about it (Asked), until it is placed (Placed) or
// deleted (Forget). A pod activated while its cycle runs is retried when
// the cycle fails: kube-scheduler records the activation.
//
// A pod activated to take room on a node may end up elsewhere, or nowhere
// (a filter turns it away); that room would then wait for the next event
// while a pod it could serve waits too. So the Queue remembers the node
// each activated pod was meant for, and plays that node again when the
// pod's cycle ends anywhere else (Failed, Placed). And it keeps the
// room from other pods meanwhile (Claimed): kube-scheduler would
// otherwise score another node for the pod, whose room was given to
// another pod released, and that pod's cycle would fail.
type Queue struct {
	activator Activator
	logger    klog.Logger
	view      *view.View
	clock     clock.PassiveClock
	rules     view.Rules
	// index is the fit gate's, told of each free first.
	index *fitgate.Index

	mu   sync.Mutex
	pods map[types.UID]*waiter
	// shapes are the waiting pods grouped by request, in order of
	// minMemoryMiB: a node that fits one pod of a shape fits them all, so
	// playing a node costs a fit per shape and per pod activated, and
	// shapes needing more memory than any GPU of the node has free are
	// not looked at.
	shapes []*shape
	byKey  map[string]*shape
	ft     placement.Fitter
	// hinted is the object of the last event the queueing hint played a
	// node for, and the pods it chose.
	hinted       any
	hintedChosen map[types.UID]bool
	// quotaFreed is when each namespace's GPU quota last may have got
	// room (see QuotaFreed).
	quotaFreed map[string]time.Time
	// quotaWaiters are the waiters each namespace's GPU quota turned away
	// (quotaAsked set), so that a namespace freeing GPUs looks at its own
	// waiters only, not at every waiting pod.
	quotaWaiters map[string]map[types.UID]*waiter
	// holding counts the waiters the fit gate holds, and promised those
	// activated for room on a node or in a cycle for it (see promise).
	holding, promised int
	// claims are the room each pod activated for room on a node is to
	// take there (see Claimed).
	claims claims
	// onHeld hear whenever the fit gate starts or stops holding a pod
	// (see OnHeld).
	onHeld []func(pod *v1.Pod, held bool)
	// judging counts the bulk judgings under way (see judgeTogether);
	// adopting is set while pods parked before this scheduler led are
	// judged anew (see Adopt), which tells them nothing.
	judging  int
	adopting bool
	// choices counts the pods plays have chosen, so that the fit gate
	// holds no pod a play chose while the gate judged it (see Held).
	choices uint64
}

// waiter is a pod waiting for GPUs.
type waiter struct {
	pod      *v1.Pod
	shape    *shape
	priority int32
	// heldOn is the node the pod was activated to take GPUs on, until its
	// next cycle starts; trying is that node while the cycle runs.
	heldOn, trying string
	// claimed is the node where the pod has a claim, if any: heldOn, or
	// trying once its cycle starts.
	claimed string
	gone    bool
	// quotaAsked, for a pod its namespace's GPU quota turned away in its
	// last cycle, is the least it asked of the quota; nil for others.
	quotaAsked *placement.Use
	// told is why the fit gate holds the pod, as last written on it.
	told string
	// held is set while the fit gate holds the pod: from its hold until
	// it is activated, its cycle starts or it is gone.
	held bool
	// untold is set when the pod fits but is held until the pods judged
	// with it are known (see turn): it is told why only if the room goes
	// to pods ahead of it once they are (see judgeTogether).
	untold bool
	// chosen is the queue's count of choices when a play last chose the
	// pod (see Queue.choices).
	chosen uint64
}

// Activator activates waiting pods, keyed by namespace/name: it has
// kube-scheduler try them again. kube-scheduler's framework.PodActivator
// is one; the extender's fit gate lifts their scheduling gate.
type Activator interface {
	Activate(logger klog.Logger, pods map[string]*v1.Pod)
}

// NewQueue returns a queue that activates pods with activator, playing
// nodes as v holds them under rules.
func NewQueue(activator Activator, logger klog.Logger, v *view.View, clk clock.PassiveClock, rules view.Rules) *Queue {
	return &Queue{
		activator: activator, logger: logger, view: v, clock: clk, rules: rules, index: fitgate.New(v, rules, clk),
		pods: map[types.UID]*waiter{}, byKey: map[string]*shape{}, quotaFreed: map[string]time.Time{},
		quotaWaiters: map[string]map[types.UID]*waiter{},
	}
}

// Index is the fit gate's index, which the queue tells of each free
// first.
func (r *Queue) Index() *fitgate.Index { return r.index }

// Clock is the queue's clock.
func (r *Queue) Clock() clock.PassiveClock { return r.clock }

// OnHeld has fn hear, under the queue's lock, whenever the fit gate starts
// or stops holding a pod, from then on; fn must only queue work.
func (r *Queue) OnHeld(fn func(pod *v1.Pod, held bool)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onHeld = append(r.onHeld, fn)
}

// Waiting remembers a pod whose scheduling cycle starts. A cycle that
// ended without placing the pod and without PostFilter frees the room it
// was activated for.
func (r *Queue) Waiting(pod *v1.Pod, req *placement.Request) {
	r.mu.Lock()
	w := r.remember(pod, req)
	r.setHeld(w, false)
	ended := w.trying
	r.promise(w, "", w.heldOn)
	// Until this cycle turns it away on the quota again, the pod waits on
	// no quota: one waiting on GPUs would take room a quota raised gives
	// from the pods behind it.
	r.setQuotaAsked(w, nil)
	// The cycle's failure writes the pod's condition anew.
	w.told = ""
	chosen := r.replay(pod.UID, ended)
	r.mu.Unlock()
	r.activate("Retrying pods for GPUs a failed cycle left", chosen)
}

// Asked remembers a pod the fit gate asks about, before it asks the
// index: a free from then on plays the pod. It returns the ticket the
// gate holds the pod with (Held).
func (r *Queue) Asked(pod *v1.Pod, req *placement.Request) (ticket uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.remember(pod, req)
	return r.choices
}

// Held notes that the fit gate holds the pod, for why, as it judged the
// pod from ticket on (Asked), and returns whether why differs from what
// the pod was last told, it is not being adopted (see Adopt), and it is
// not held untold while judged with other pods (see untoldBehind) (tell).
// The room the pod was activated for before ticket, if any, is not played
// again: the gate runs under kube-scheduler's queue lock, which
// activating takes, and that room was taken or the gate would not hold
// the pod. A pod a play chose since ticket is not held (held false): the
// gate judged it on an index that did not have the free yet, and the
// play's activation may reach kube-scheduler before the hold, or the
// screen hide the pod after it; held, it would wait for the next free.
func (r *Queue) Held(uid types.UID, why string, ticket uint64) (held, tell bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.pods[uid]
	if !ok {
		return true, false
	}
	if w.chosen > ticket {
		return false, false
	}
	r.promise(w, "", w.trying)
	r.setHeld(w, true)
	if w.told == why || w.untold && r.judging > 0 {
		return true, false
	}
	w.told = why
	// A pod parked before this scheduler led was told why when it was
	// parked; told again as it is adopted, every parked pod would be
	// written anew, the figures in its reason having changed.
	return true, !r.adopting
}

// remember returns the waiter of the pod, adding it, or moving it to the
// shape of req. It runs under r.mu.
func (r *Queue) remember(pod *v1.Pod, req *placement.Request) *waiter {
	w, ok := r.pods[pod.UID]
	key := fitgate.ShapeKey(req)
	if !ok {
		w = &waiter{pod: pod, priority: preemption.Priority(pod)}
		r.pods[pod.UID] = w
		r.join(w, key, req)
		return w
	}
	w.pod = pod
	if w.shape.key != key {
		r.leave(w)
		w.gone = false
		r.join(w, key, req)
	}
	return w
}

// Placed drops a pod that Reserve placed on node, and plays again the
// nodes it was activated for.
func (r *Queue) Placed(uid types.UID, node string) {
	r.mu.Lock()
	var chosen []*v1.Pod
	if w, ok := r.pods[uid]; ok {
		r.remove(w)
		chosen = r.replayAll(uid, node, w)
	}
	r.mu.Unlock()
	r.activate("Retrying pods for GPUs a placed pod left", chosen)
}

// Failed notes that the pod's cycle found no node, and plays again the
// node it was activated for, without it.
func (r *Queue) Failed(uid types.UID) {
	r.mu.Lock()
	var chosen []*v1.Pod
	if w, ok := r.pods[uid]; ok {
		chosen = r.replay(uid, w.trying)
		r.promise(w, w.heldOn, "")
	}
	r.mu.Unlock()
	r.activate("Retrying pods for GPUs a failed cycle left", chosen)
}

// Forget drops a pod that is gone, and plays again the nodes it was
// activated for.
func (r *Queue) Forget(uid types.UID) {
	r.mu.Lock()
	var chosen []*v1.Pod
	if w, ok := r.pods[uid]; ok {
		r.remove(w)
		chosen = r.replayAll(uid, "", w)
	}
	r.mu.Unlock()
	r.activate("Retrying pods for GPUs a deleted pod was to take", chosen)
}

// Freed activates the waiting pods that the node, as the view holds it
// now, could serve.
func (r *Queue) Freed(node string) {
	// The pods activated ask the fit gate again, which must know the room.
	r.index.Freed(node)
	r.mu.Lock()
	chosen := r.play(node, "")
	r.mu.Unlock()
	r.activate("GPUs freed; retrying pods", chosen, "node", node)
}

// preemptible releases the held pods that may preempt and whose
// priority is above lowest, the priority of a pod just bound below every
// other: kube-scheduler's preemption may now make room for them, which
// the fit gate leaves to it.
func (r *Queue) preemptible(lowest int32) {
	r.mu.Lock()
	var chosen []*v1.Pod
	for _, w := range r.pods {
		if w.held && w.priority > lowest && mayPreempt(w.pod) {
			r.setHeld(w, false)
			chosen = append(chosen, w.pod)
		}
	}
	r.mu.Unlock()
	r.activate("A pod was bound below every other priority; retrying the held pods that could preempt it", chosen, "priority", lowest)
}

// Hint tells kube-scheduler whether an event about the object on node
// may let the waiting pod fit: whether playing the node activates the pod.
// A pod the Queue does not know is queued. kube-scheduler asks about
// one event for every waiting pod in turn, so the node is played once per
// object.
func (r *Queue) Hint(pod *v1.Pod, object any, node string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if object != r.hinted {
		r.hinted, r.hintedChosen = object, map[types.UID]bool{}
		for _, p := range r.play(node, "") {
			r.hintedChosen[p.UID] = true
		}
	}
	_, known := r.pods[pod.UID]
	return !known || r.hintedChosen[pod.UID]
}

// replay plays a node again without the pod except, whose cycle ended;
// node "" plays nothing.
func (r *Queue) replay(except types.UID, node string) []*v1.Pod {
	if node == "" {
		return nil
	}
	return r.play(node, except)
}

// replayAll plays again the nodes the waiter was activated for, but the
// node it was placed on.
func (r *Queue) replayAll(uid types.UID, placedOn string, w *waiter) []*v1.Pod {
	var chosen []*v1.Pod
	if w.trying != placedOn {
		chosen = r.replay(uid, w.trying)
	}
	if w.heldOn != placedOn && w.heldOn != w.trying {
		chosen = append(chosen, r.replay(uid, w.heldOn)...)
	}
	return chosen
}

// play walks the waiting pods in queue order, fits each on the node as
// the view holds it and returns those that fit, its namespace's GPU quota
// included, each taking its room, marking them held on the node. Pods held on another node are passed by;
// those held on this one take their room again. It runs under r.mu.
func (r *Queue) play(node string, except types.UID) []*v1.Pod {
	if len(r.pods) == 0 {
		return nil
	}
	var chosen []*v1.Pod
	now := r.clock.Now()
	claimants := r.claims.on(node)
	r.view.Read([]string{node}, "", func(_ string, n *view.Node) {
		if n == nil || !r.rules.Unavailable(n, now).OK() {
			return
		}
		room := placement.Node{Name: node, Devices: slices.Clone(n.Placement.Devices)}
		type candidate struct {
			s    *shape
			next int
		}
		var cands []candidate
		// taken is what the pods chosen take of their namespaces' quotas.
		taken := map[string]placement.Use{}
		most, _ := fitgate.MostFreeMemoryMiB(&room)
		for _, s := range r.shapes {
			if s.minMemoryMiB > most {
				break
			}
			if closed, _ := r.rules.Closed(n, now, s.req); closed.OK() && r.ft.Feasible(&room, s.req, nil) {
				cands = append(cands, candidate{s: s})
			}
		}
		for len(cands) > 0 {
			// The candidate whose next pod comes first in the queue.
			best := -1
			for i := range cands {
				c := &cands[i]
				for c.next < len(c.s.pods) && (!c.s.has(c.s.pods[c.next]) || !r.playable(c.s.pods[c.next], node, except)) {
					c.next++
				}
				if c.next < len(c.s.pods) && (best < 0 || before(c.s.pods[c.next], cands[best].s.pods[cands[best].next])) {
					best = i
				}
			}
			if best < 0 {
				return
			}
			c := &cands[best]
			assignment, failure := placement.Fit(&room, c.s.req)
			if failure != nil {
				cands = slices.Delete(cands, best, best+1)
				continue
			}
			w := c.s.pods[c.next]
			c.next++
			if !r.quotaRoom(w, assignment, &room, taken) {
				continue
			}
			holds := placement.Holds(assignment)
			room.Add(holds)
			r.promise(w, node, w.trying)
			if w.pod.Spec.SchedulingGroup == nil {
				// A gang's pods take room together, in its own cycle: a
				// claim would keep one pod's room from the others.
				r.claim(w, node, holds, now)
			}
			r.setHeld(w, false)
			r.choices++
			w.chosen = r.choices
			chosen = append(chosen, w.pod)
		}
	})
	r.unclaim(node, claimants, chosen)
	return chosen
}

// claim records that the waiter, activated for room on node, is to take
// holds there, in place of any claim it had. It runs under r.mu.
func (r *Queue) claim(w *waiter, node string, holds []placement.Hold, now time.Time) {
	if w.claimed != "" && w.claimed != node {
		r.claims.drop(w.pod.UID, w.claimed)
	}
	w.claimed = node
	r.claims.set(w.pod.UID, node, holds, w.priority, now)
}

// unclaim drops the claims on node of the claimants a play of it did not
// choose again: the room went to pods ahead of them. One activated for
// the node is no longer promised it, so that the fit gate holds it
// again rather than let a cycle fail for room another pod has. It runs
// under r.mu.
func (r *Queue) unclaim(node string, claimants []types.UID, chosen []*v1.Pod) {
	for _, uid := range claimants {
		if slices.ContainsFunc(chosen, func(p *v1.Pod) bool { return p.UID == uid }) {
			continue
		}
		w, ok := r.pods[uid]
		if !ok || w.claimed != node {
			continue
		}
		r.claims.drop(uid, node)
		w.claimed = ""
		if w.heldOn == node {
			r.promise(w, "", w.trying)
		}
	}
}

// Claimed returns what the pods other than except, activated for room on
// the node, are to take there, for Filter to count as taken: kube-scheduler
// scores every node that fits a pod, and would place a pod released for
// one node's room on room another node gave another pod, whose cycle would
// then fail. Only the claims of pods of priority at least priority (the
// filtered pod's) count: a pod of higher priority comes first in the
// queue, and takes room before lower ones rather than evict for it. A
// claim counts from the play that gave the room until the pod's cycle
// ends, for claimFor at most. The caller must not change the holds
// returned: other Filters may be reading them.
func (r *Queue) Claimed(node string, except types.UID, priority int32) []placement.Hold {
	return r.claims.others(node, except, priority, r.clock.Now())
}

// turn reports whether the GPUs the pod could take now are its own in
// queue order, so that the fit gate lets by only as many pods as the
// room holds. They are when the pod was activated for them, or when the
// gate holds no other pod and no pod activated for room or in a cycle is
// on its way to take it (the view may not hold that room taken yet: in
// the extender's fit gate, not until the pod is bound). Otherwise the
// nodes that could hold it
// (fitting, from the gate's index) are played in turn until one gives it
// room: the held pods ahead of it take theirs first, and are activated.
// They are not its own when the pods ahead took all of it. A pod is
// never held for room no pod took: when no node gave any pod room, the
// room is its own.
func (r *Queue) turn(uid types.UID, fitting func(fn func(node string) bool)) bool {
	r.mu.Lock()
	w, ok := r.pods[uid]
	others := r.holding
	if ok && w.held {
		others--
	}
	if r.judging > 0 && ok && w.heldOn == "" {
		// The room goes in queue order once every pod judged is known.
		w.untold = true
		r.mu.Unlock()
		return false
	}
	if !ok || w.heldOn != "" || others == 0 && r.promised == 0 {
		r.mu.Unlock()
		return true
	}
	var ahead []*v1.Pod
	fitting(func(node string) bool {
		for _, p := range r.play(node, "") {
			if p.UID != uid {
				ahead = append(ahead, p)
			}
		}
		return w.heldOn == ""
	})
	own := w.heldOn != "" || len(ahead) == 0
	r.mu.Unlock()
	// Not activated here: the gate runs under kube-scheduler's queue
	// lock, which activating takes.
	if len(ahead) > 0 {
		go r.activate("GPUs free; retrying the pods ahead of a pod that fits", ahead)
	}
	return own
}

// Adopt has the fit gate judge together the pods parked before this
// scheduler led (judge asks it about one), telling them nothing: each was
// told why it waits when it was parked, and told again every parked pod
// would be written anew, the figures in its reason having changed.
func (r *Queue) Adopt(pods []*v1.Pod, judge func(*v1.Pod)) {
	r.mu.Lock()
	r.adopting = true
	r.mu.Unlock()
	r.judgeTogether(func() {
		for _, pod := range pods {
			judge(pod)
		}
	}, "Parked pods judged anew; retrying those GPUs free now hold", "parked", len(pods))
	r.mu.Lock()
	r.adopting = false
	r.mu.Unlock()
}

// JudgeWaited has the fit gate judge together, once the view has synced,
// the pods that waited for it: kube-scheduler asks the gate about each
// pod it is handed again. The pods that fit but whose room went to pods
// ahead of them are told so (reasons).
func (r *Queue) JudgeWaited(ctx context.Context, u *Unsynced, view string, reasons Teller) {
	pods := u.Run(ctx)
	behind := r.judgeTogether(func() {
		r.activate(view+" synced; judging the pods that waited for it", pods)
	}, "Pods that waited for the view judged; retrying those GPUs free now hold", "pods", len(pods))
	for _, pod := range behind {
		reasons.Tell(pod, HeldPrefix+Promised)
	}
}

// JudgeTogether has the fit gate judge the pods at once (judge asks it
// about one), in judgeTogether's way, telling those held why (reasons),
// and then releases those that GPUs free now hold, in queue order.
func (r *Queue) JudgeTogether(pods []*v1.Pod, judge func(*v1.Pod), reasons Teller, msg string, kv ...any) {
	behind := r.judgeTogether(func() {
		for _, pod := range pods {
			judge(pod)
		}
	}, msg, kv...)
	for _, pod := range behind {
		reasons.Tell(pod, HeldPrefix+Promised)
	}
}

// judgeTogether has the fit gate judge many pods at once (judge has it
// judge them), and then plays every node that could hold a waiting pod.
// While it judges, the gate holds a pod it would let by for room, since
// pods ahead of it in queue order may not be known yet. Played one pod at
// a time, as turn plays, each pod judged would play every node that could
// hold it, under kube-scheduler's queue lock, again and again while frees
// come: a first start over 180,000 waiting pods judged them for minutes.
func (r *Queue) judgeTogether(judge func(), msg string, kv ...any) (behind []*v1.Pod) {
	r.mu.Lock()
	r.judging++
	r.mu.Unlock()
	judge()
	r.mu.Lock()
	r.judging--
	chosen := r.playFitting(r.shapes)
	if r.judging == 0 {
		behind = r.untoldBehind()
	}
	r.mu.Unlock()
	r.activate(msg, chosen, kv...)
	return behind
}

// untoldBehind returns the pods held untold while they were judged
// together (see turn) that are held still, since the pods ahead of them
// took the room that fit them, and notes that they are told so; pods
// being adopted are told nothing. It runs under r.mu.
func (r *Queue) untoldBehind() []*v1.Pod {
	why := HeldPrefix + Promised
	var behind []*v1.Pod
	for _, w := range r.pods {
		if !w.untold {
			continue
		}
		w.untold = false
		if w.held && !r.adopting && w.told != why {
			w.told = why
			behind = append(behind, w.pod)
		}
	}
	return behind
}

// promise sets the node the waiter was activated for (heldOn) and the
// one its cycle tries (trying), and counts the waiters with either: the
// room they are to take may not be in the view yet. It runs under r.mu.
func (r *Queue) promise(w *waiter, heldOn, trying string) {
	was := w.heldOn != "" || w.trying != ""
	w.heldOn, w.trying = heldOn, trying
	if w.claimed != "" && w.claimed != heldOn && w.claimed != trying {
		r.claims.drop(w.pod.UID, w.claimed)
		w.claimed = ""
	}
	switch is := heldOn != "" || trying != ""; {
	case is && !was:
		r.promised++
	case was && !is:
		r.promised--
	}
}

// setHeld notes whether the fit gate holds the waiter. It runs under r.mu.
func (r *Queue) setHeld(w *waiter, held bool) {
	if !held {
		w.untold = false
	}
	if w.held == held {
		return
	}
	w.held = held
	if held {
		r.holding++
	} else {
		r.holding--
	}
	for _, fn := range r.onHeld {
		fn(w.pod, held)
	}
}

// Release holds the pod no longer, which unparks it: kube-scheduler
// then meets it and asks the fit gate about it anew.
func (r *Queue) Release(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w, ok := r.pods[uid]; ok {
		r.setHeld(w, false)
	}
}

// HoldsAny reports whether the fit gate holds any pod.
func (r *Queue) HoldsAny() bool { return r.Holding() > 0 }

// Holding returns how many pods the fit gate holds.
func (r *Queue) Holding() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.holding
}

// Holds reports whether the Queue knows the pod, and whether the fit
// gate holds it.
func (r *Queue) Holds(uid types.UID) (known, held bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.pods[uid]
	return ok, ok && w.held
}

// StillHeld reports whether the fit gate holds the pod now.
func (r *Queue) StillHeld(uid types.UID) bool {
	_, held := r.Holds(uid)
	return held
}

// playable reports whether playing node may activate the waiter, one of
// the shape being played (see shape.has): not when it was activated for
// another node, nor while its cycle tries another node with its claim
// there.
func (r *Queue) playable(w *waiter, node string, except types.UID) bool {
	if w.pod.UID == except {
		return false
	}
	return w.heldOn == node || w.heldOn == "" && (w.trying == "" || w.trying == node)
}

// activateChunk is the most pods activated under one hold of
// kube-scheduler's queue lock.
const activateChunk = 500

// activate activates pods, outside r.mu: kube-scheduler calls the hints
// with its queue locked.
func (r *Queue) activate(msg string, pods []*v1.Pod, kv ...any) {
	if len(pods) == 0 {
		return
	}
	r.logger.V(4).Info(msg, append(kv, "pods", len(pods))...)
	// kube-scheduler runs the fit gate on each pod activated under its
	// queue's lock: a scheduler judging a backlog at its start would hold
	// the lock, and every pod a free releases meanwhile, for the minute the
	// whole backlog takes.
	for chunk := range slices.Chunk(pods, activateChunk) {
		m := make(map[string]*v1.Pod, len(chunk))
		for _, p := range chunk {
			m[p.Namespace+"/"+p.Name] = p
		}
		r.activator.Activate(r.logger, m)
	}
}

// before reports whether a comes before b in kube-scheduler's queue:
// higher priority first, then older.
func before(a, b *waiter) bool {
	return QueueOrder(a.pod, a.priority, b.pod, b.priority) < 0
}

// QueueOrder compares pods a and b of priorities pa and pb in
// kube-scheduler's queue order: higher priority first, then older.
func QueueOrder(a *v1.Pod, pa int32, b *v1.Pod, pb int32) int {
	if pa != pb {
		return cmp.Compare(pb, pa)
	}
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.UID, b.UID)
}

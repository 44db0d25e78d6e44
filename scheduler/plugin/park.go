package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/podfilter"
	"github.com/tessera-gpu/tessera/scheduler/options"
	"github.com/tessera-gpu/tessera/scheduler/preemption"
	"github.com/tessera-gpu/tessera/scheduler/tracker"
	"github.com/tessera-gpu/tessera/scheduler/waiters"
)

const (
	// parkAfter is how long the fit gate holds a pod in kube-scheduler's
	// queue before parking it: a pod released sooner costs no write.
	parkAfter = 2 * time.Second
	// parkWorkers park at once, and unparkWorkers unpark, from a queue of
	// their own: a pod released does not wait behind the pods held before
	// it (180,000 at a first start take 6 minutes to park).
	parkWorkers   = 16
	unparkWorkers = 4
	// parksPerSecond bounds the writes that park pods, so that a burst of
	// thousands of pods held at once is parked over seconds, not in one
	// storm of writes. busyParksPerSecond bounds them while pods are
	// placed (waiters.Placing): a pod not parked yet costs kube-scheduler
	// nothing while this scheduler leads, since the screen hides it long
	// before its label is written; only a new leader meets it, and judges
	// it in its first pass. In a first start over 180,000 held pods at
	// 5,000 nodes, parks at 500 a second kept kube-apiserver busy for
	// minutes and the median free waited at least 16 s for its pod.
	parksPerSecond     = 500
	busyParksPerSecond = 10
)

// Parking holds the pods that the fit gate holds outside kube-scheduler's
// queue. It is on when the scheduler's pod informer leaves out the pods
// labelled gpuv1alpha1.ParkedLabel, as the tessera-scheduler command's
// does, and Leading closes once the scheduler leads: only the leader
// writes.
type Parking struct {
	Leading <-chan struct{}
	// Screen, when set, hides the pods the gates hold from the scheduler's
	// pod informer at once, before they are parked.
	Screen *Screen
}

// parker parks the pods the fit gate holds outside kube-scheduler's
// queue, by labelling them gpuv1alpha1.ParkedLabel: kube-scheduler then
// neither keeps them in its queue nor walks them on every assigned pod's
// event, and a scheduler that starts does not read them at all. A pod
// held for parkAfter is parked, at the pace parksPerSecond and
// busyParksPerSecond set; one the requeuer releases is unparked at once,
// unbounded, and kube-scheduler meets it anew and asks the gate about it.
// Being the gate's, the requeuer's memory says which pods are held; the
// label follows it. A parked pod the requeuer does not know (after a
// restart, or one labelled by someone else) is judged by the gate anew,
// and unparked unless the gate holds it; the label is taken off pods
// bound or ended.
type parker struct {
	kube    kubernetes.Interface
	pods    corelisters.PodLister
	leading <-chan struct{}
	// ready reports whether the gate's view has synced: a pod is judged
	// only on a synced view.
	ready func() bool
	// holds reports whether the requeuer knows the pod and holds it.
	holds func(types.UID) (known, held bool)
	// judge asks the gate about a pod, which the requeuer then knows,
	// and adoptAll has it judge pods parked before (waiters.Queue.Adopt).
	judge    func(*v1.Pod)
	adoptAll func([]*v1.Pod, func(*v1.Pod))
	// release has the requeuer hold the pod no longer (waiters.Queue.Release).
	release func(types.UID)
	// after is how long a pod is held before it is parked: parkAfter.
	after time.Duration
	pace  *waiters.Pace
	// queue has the pods to park, or to look at; unparks the pods
	// released.
	queue, unparks workqueue.TypedRateLimitingInterface[cache.ObjectName]

	mu sync.Mutex
	// released are the pods this scheduler released, by UID, until their
	// label is off or they are gone: one the requeuer no longer knows
	// since it was placed is not judged anew while its label lags (see
	// sync).
	released map[cache.ObjectName]types.UID
}

func newParker(kube kubernetes.Interface, pods corelisters.PodLister, leading <-chan struct{}, placing *waiters.Placing) *parker {
	return &parker{
		kube:    kube,
		pods:    pods,
		leading: leading,
		after:   parkAfter,
		pace:    waiters.NewPace(placing, parksPerSecond, busyParksPerSecond),
		// Pods to park are taken last in queue order first (lastFirst).
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{
				DelayingQueue: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[cache.ObjectName]{
					Queue: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[cache.ObjectName]{Queue: newLastFirst(pods)}),
				}),
			}),
		unparks:  workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]()),
		released: map[cache.ObjectName]types.UID{},
	}
}

// held tells the parker that the gate now holds the pod, or no longer.
// It runs under the requeuer's lock, and only queues.
func (pk *parker) held(pod *v1.Pod, held bool) {
	key := cache.MetaObjectToName(pod)
	pk.mu.Lock()
	if held {
		delete(pk.released, key)
	} else {
		pk.released[key] = pod.UID
	}
	pk.mu.Unlock()
	if held {
		pk.queue.AddAfter(key, pk.after)
		return
	}
	pk.unparks.Add(key)
}

// wasReleased reports whether this scheduler released the pod and its
// label has not been seen off since.
func (pk *parker) wasReleased(key cache.ObjectName, uid types.UID) bool {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	return pk.released[key] == uid
}

// unlabelled forgets that the pod of key was released: its label is off,
// or it is gone.
func (pk *parker) unlabelled(key cache.ObjectName) {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	delete(pk.released, key)
}

// handler looks at every parked pod of the profile, and at every pod
// unparked, from an informer on the profile's pods that keeps parked ones
// in. A parked pod whose spec or annotations change, which
// kube-scheduler would ask the gate about anew but does not see, is
// released: unparked, kube-scheduler meets it and the gate judges what it
// asks for now.
func (pk *parker) handler() cache.ResourceEventHandler {
	look := func(objs ...any) {
		for _, obj := range objs {
			if pod, ok := obj.(*v1.Pod); ok && parked(pod) {
				pk.queue.Add(cache.MetaObjectToName(pod))
				return
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { look(obj) },
		UpdateFunc: func(old, obj any) {
			was, _ := old.(*v1.Pod)
			if pod, ok := obj.(*v1.Pod); ok && was != nil && parked(pod) && requestChanged(was, pod) {
				pk.release(pod.UID)
			}
			look(old, obj)
		},
	}
}

// requestChanged reports whether what the pod asks for may differ
// between its two versions: what the gate reads is in the spec and the
// annotations.
func requestChanged(was, pod *v1.Pod) bool {
	return !maps.Equal(was.Annotations, pod.Annotations) || !equality.Semantic.DeepEqual(was.Spec, pod.Spec)
}

// run parks and unparks pods once the scheduler leads and the gate's view
// has synced, until ctx ends.
func (pk *parker) run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		pk.queue.ShutDown()
		pk.unparks.ShutDown()
	}()
	select {
	case <-pk.leading:
	case <-ctx.Done():
		return
	}
	if wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) { return pk.ready(), nil }) != nil {
		return
	}
	pk.adopt()
	for range parkWorkers {
		go pk.work(ctx, pk.queue, true)
	}
	for range unparkWorkers {
		go pk.work(ctx, pk.unparks, false)
	}
}

// adopt has the gate judge together the pods parked before this
// scheduler led, which it does not know.
func (pk *parker) adopt() {
	pods, err := pk.pods.List(labels.Everything())
	if err != nil {
		return
	}
	var adopted []*v1.Pod
	for _, pod := range pods {
		if known, _ := pk.holds(pod.UID); !known && parked(pod) && pending(pod) && !pk.wasReleased(cache.MetaObjectToName(pod), pod.UID) {
			adopted = append(adopted, pod)
		}
	}
	// In queue order, each joins its shape's list at the tail.
	slices.SortFunc(adopted, func(a, b *v1.Pod) int {
		return waiters.QueueOrder(a, preemption.Priority(a), b, preemption.Priority(b))
	})
	pk.adoptAll(adopted, pk.judge)
}

// work syncs the pods of queue until it shuts down; parks says whether
// it may park them, or hands those to the parking queue.
func (pk *parker) work(ctx context.Context, queue workqueue.TypedRateLimitingInterface[cache.ObjectName], parks bool) {
	for {
		key, quit := queue.Get()
		if quit {
			return
		}
		if err := pk.sync(ctx, key, parks); err != nil {
			klog.FromContext(ctx).V(2).Info("Parking or unparking a pod failed; retrying", "pod", key, "err", err)
			queue.AddRateLimited(key)
		} else {
			queue.Forget(key)
		}
		queue.Done(key)
	}
}

// sync parks the pod when the gate holds it and unparks it otherwise; a
// pod to park goes to the parking queue unless parks is set. A parked
// pod the requeuer does not know is judged anew, unless this scheduler
// released it: the requeuer forgets a pod once it is placed, and its
// label may still be on while it is bound (its unpark slow, or failing
// while kube-apiserver restarts). Judged then, the gate could hold it
// and the screen hide it, and kube-scheduler would forget the pod it is
// binding, place it a second time when it is shown again, and count its
// GPUs once.
func (pk *parker) sync(ctx context.Context, key cache.ObjectName, parks bool) error {
	pod, err := pk.pods.Pods(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		pk.unlabelled(key)
		return nil
	}
	if err != nil {
		return err
	}
	isParked := parked(pod)
	if !isParked {
		pk.unlabelled(key)
	}
	known, held := pk.holds(pod.UID)
	if isParked && pending(pod) && !known && !pk.wasReleased(key, pod.UID) {
		pk.judge(pod)
		_, held = pk.holds(pod.UID)
	}
	park := pending(pod) && held
	if park == isParked {
		return nil
	}
	if park && !parks {
		pk.queue.Add(key)
		return nil
	}
	if park {
		if pk.pace.Wait(ctx) != nil {
			return nil
		}
		// Released while waiting for its turn.
		if _, held := pk.holds(pod.UID); !held {
			return nil
		}
	}
	return pk.label(ctx, pod, park)
}

// parked reports whether the pod is parked.
func parked(pod *v1.Pod) bool {
	return pod.Labels[gpuv1alpha1.ParkedLabel] != ""
}

// pending reports whether the pod waits to be scheduled.
func pending(pod *v1.Pod) bool {
	return pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil && !tracker.PodDone(pod)
}

// label puts the parked label on the pod, or takes it off.
func (pk *parker) label(ctx context.Context, pod *v1.Pod, park bool) error {
	var value any // null takes the label off
	if park {
		value = "true"
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		// The UID makes the patch fail on another pod of the same name.
		"uid":    pod.UID,
		"labels": map[string]any{gpuv1alpha1.ParkedLabel: value},
	}})
	if err != nil {
		return err
	}
	_, err = pk.kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone, or another pod of that name.
		return nil
	case err != nil && (apierrors.IsInvalid(err) || apierrors.IsForbidden(err)):
		// An admission policy or RBAC refuses the scheduler the label.
		// A pod not parked waits in kube-scheduler's queue, as without
		// parking; one not unparked is tried again, since the label
		// keeps it from a scheduler that starts until its gate judges
		// it.
		klog.FromContext(ctx).Error(err, "The API server refused the scheduler the label "+gpuv1alpha1.ParkedLabel, "pod", klog.KObj(pod), "park", park)
		if park {
			return nil
		}
	}
	return err
}

// park starts parking the pods the fit gate holds, and hiding them with
// the parking's screen until they are parked: pods is an informer on the
// profile's pods, pending ones at least, whole, that does not leave
// parked ones out (see pendingPods), kube the client that writes the label,
// ready whether the gate's view has synced, and judge asks the gate about
// a pod, which the queue r then knows; parks make way while placing says
// pods are placed. It parks until ctx ends.
func park(ctx context.Context, r *waiters.Queue, parking *Parking, kube kubernetes.Interface, pods coreinformers.PodInformer, ready func() bool, placing *waiters.Placing, judge func(*v1.Pod)) error {
	pk := newParker(kube, pods.Lister(), parking.Leading, placing)
	pk.holds, pk.judge, pk.adoptAll, pk.release = r.Holds, judge, r.Adopt, r.Release
	reg, err := pods.Informer().AddEventHandler(pk.handler())
	if err != nil {
		return fmt.Errorf("watching parked pods: %w", err)
	}
	pk.ready = func() bool { return reg.HasSynced() && ready() }
	r.OnHeld(pk.held)
	if parking.Screen != nil {
		r.OnHeld(parking.Screen.held)
		parking.Screen.follow(func(uid types.UID) bool {
			_, held := r.Holds(uid)
			return held
		})
	}
	go pk.run(ctx)
	return nil
}

// watchPlacing notes, for the bookkeeping writes that make way for them,
// when pods are placed: released by the queue r, or bound or deleted as
// the informer on pods sees.
func watchPlacing(r *waiters.Queue, pods coreinformers.PodInformer) (*waiters.Placing, error) {
	placing := waiters.NewPlacing(r.Clock())
	if _, err := pods.Informer().AddEventHandler(placing.Handler()); err != nil {
		return nil, fmt.Errorf("watching pods placed: %w", err)
	}
	r.OnHeld(placing.Held)
	return placing, nil
}

// parkingClient is a client of the fit gate's own, to park pods with
// beside kube-scheduler's binds.
func parkingClient(h fwk.Handle) (kubernetes.Interface, error) {
	cfg := rest.CopyConfig(h.KubeConfig())
	cfg.QPS, cfg.Burst = options.DefaultClientQPS, options.DefaultClientBurst
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("a client to park pods with: %w", err)
	}
	return kube, nil
}

// pendingPods is parkingClient and kube-scheduler's pod informer, seen
// as an informer on the profile's pods that are not bound, parked ones
// included: the gate judges them anew after a restart. Pods bound with
// the label still on stay in it until the parker takes the label off (a
// released pod may be bound before its unpark is written). In plugin
// mode the view's informer, on the same pods, serves instead.
func pendingPods(h fwk.Handle, screen *Screen) (kubernetes.Interface, coreinformers.PodInformer, error) {
	kube, err := parkingClient(h)
	if err != nil {
		return nil, nil, err
	}
	informer, err := screen.unscreened()
	if err != nil {
		return nil, nil, err
	}
	profile := h.ProfileName()
	return kube, podfilter.New(informer, func(pod *v1.Pod) bool {
		return pod.Spec.SchedulerName == profile && (pod.Spec.NodeName == "" || parked(pod))
	}), nil
}

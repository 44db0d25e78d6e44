package nodeagent

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	"k8s.io/utils/ptr"
)

// ContainerResult is a plugin's answer for one container.
type ContainerResult struct {
	// Container is the container's name.
	Container string
	// Resource is the extended resource the devices are for.
	Resource string
	// DeviceIDs are the plugin's device IDs the container got.
	DeviceIDs []string
	// Response is the plugin's Allocate answer: environment, mounts, devices.
	Response *pluginapi.ContainerAllocateResponse
	// CDIDevices are the CDI devices the container's resource claims got
	// from their DRA drivers (a result of its own, with no Resource).
	CDIDevices []string
}

// sync admits a bound pod once, or releases a finished one.
func (a *Agent) sync(ctx context.Context, pod *corev1.Pod) error {
	if pod.DeletionTimestamp != nil {
		return a.finishDeletion(ctx, pod)
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		a.release(pod.UID)
		a.unprepareClaims(ctx, pod.UID)
		return nil
	}
	if pod.Status.Phase == corev1.PodRunning && a.restarting(pod.UID) {
		return a.restartContainers(ctx, pod)
	}
	if pod.Status.Phase != corev1.PodPending {
		return nil
	}
	// A pod admitted before whose Running status did not land (a conflict
	// with another writer) is not admitted again: its devices are served.
	a.mu.Lock()
	_, admitted := a.results[pod.UID]
	a.mu.Unlock()
	if !admitted {
		if err := a.waitResumed(ctx); err != nil {
			return err
		}
		a.list(pod)
		cdiDevices, err := a.prepareClaims(ctx, pod)
		var results []ContainerResult
		if err == nil {
			results, err = a.allocate(ctx, pod)
		}
		if err != nil {
			a.unlist(pod.UID)
			if _, retry := err.(retryable); retry {
				return err
			}
			klog.FromContext(ctx).Info("Pod admission failed", "pod", klog.KObj(pod), "err", err)
			return a.setPhase(ctx, pod, corev1.PodFailed, "UnexpectedAdmissionError", err.Error())
		}
		results = append(results, cdiResults(pod, cdiDevices)...)
		a.mu.Lock()
		a.results[pod.UID] = results
		a.mu.Unlock()
		klog.FromContext(ctx).V(2).Info("Pod admitted", "pod", klog.KObj(pod), "containers", len(results))
	}
	return a.setPhase(ctx, pod, corev1.PodRunning, "", "")
}

// retryable marks an error that a later attempt may not hit, such as a
// plugin that has not registered yet.
type retryable struct{ error }

// allocate asks the plugins for each container's devices in the kubelet's
// order. Devices of init containers return to the pod's pool for the
// containers after them, as the kubelet reuses them.
func (a *Agent) allocate(ctx context.Context, pod *corev1.Pod) ([]ContainerResult, error) {
	var (
		results []ContainerResult
		held    []string
		reuse   []string
	)
	containers := append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...)
	for i, c := range containers {
		isInit := i < len(pod.Spec.InitContainers)
		sidecar := isInit && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		for name, q := range c.Resources.Limits {
			if !slices.Contains(a.DeviceResources, string(name)) || draBacked(pod, c.Name, string(name)) {
				continue
			}
			p := a.plugin(string(name))
			if p == nil {
				a.unhold(held)
				return nil, retryable{fmt.Errorf("no device plugin has registered %s yet", name)}
			}
			p.waitDevices(ctx)
			count := int(q.Value())
			ids, err := a.choose(ctx, p, count, reuse)
			if err != nil {
				a.unhold(held)
				return nil, err
			}
			resp, err := p.client.Allocate(ctx, &pluginapi.AllocateRequest{
				ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: ids}},
			})
			if err != nil {
				a.unhold(held)
				return nil, fmt.Errorf("allocating %s for container %s: %w", name, c.Name, err)
			}
			if len(resp.ContainerResponses) != 1 {
				a.unhold(held)
				return nil, fmt.Errorf("allocating %s for container %s: plugin answered %d container responses, want 1",
					name, c.Name, len(resp.ContainerResponses))
			}
			results = append(results, ContainerResult{Container: c.Name, Resource: string(name), DeviceIDs: ids, Response: resp.ContainerResponses[0]})
			reuse = slices.DeleteFunc(reuse, func(id string) bool { return slices.Contains(ids, id) })
			held = append(held, ids...)
			if isInit && !sidecar {
				reuse = append(reuse, ids...)
			}
		}
	}
	a.mu.Lock()
	a.held[pod.UID] = held
	a.mu.Unlock()
	return results, nil
}

// choose picks count device IDs, steered by the plugin's preference, and
// marks them in use.
func (a *Agent) choose(ctx context.Context, p *plugin, count int, reuse []string) ([]string, error) {
	a.mu.Lock()
	available := append(p.available(a.inUse), reuse...)
	a.mu.Unlock()
	slices.Sort(available)
	if len(available) < count {
		return nil, fmt.Errorf("resource %s: %d devices free, %d asked", p.resource, len(available), count)
	}
	ids := available[:count]
	if p.options != nil && p.options.GetPreferredAllocationAvailable {
		resp, err := p.client.GetPreferredAllocation(ctx, &pluginapi.PreferredAllocationRequest{
			ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
				AvailableDeviceIDs: available, AllocationSize: int32(count),
			}},
		})
		if err != nil {
			return nil, retryable{fmt.Errorf("asking %s for preferred devices: %w", p.resource, err)}
		}
		if len(resp.ContainerResponses) == 1 && len(resp.ContainerResponses[0].DeviceIDs) == count &&
			subset(resp.ContainerResponses[0].DeviceIDs, available) {
			ids = resp.ContainerResponses[0].DeviceIDs
		}
	}
	a.mu.Lock()
	for _, id := range ids {
		a.inUse[id] = true
	}
	a.mu.Unlock()
	return slices.Clone(ids), nil
}

func (a *Agent) unhold(ids []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range ids {
		delete(a.inUse, id)
	}
}

func subset(ids, of []string) bool {
	for _, id := range ids {
		if !slices.Contains(of, id) {
			return false
		}
	}
	return true
}

// finishDeletion does the kubelet's part of a graceful deletion: its
// containers are stopped (there are none to stop here), its devices freed,
// and the pod object removed for good.
func (a *Agent) finishDeletion(ctx context.Context, pod *corev1.Pod) error {
	a.release(pod.UID)
	a.unprepareClaims(ctx, pod.UID)
	err := a.Kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("finishing the deletion of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// setPhase writes the pod's phase as the kubelet would.
func (a *Agent) setPhase(ctx context.Context, pod *corev1.Pod, phase corev1.PodPhase, reason, message string) error {
	pod = pod.DeepCopy()
	now := metav1.Now()
	pod.Status.Phase, pod.Status.Reason, pod.Status.Message = phase, reason, message
	pod.Status.StartTime = &now
	ready := corev1.ConditionFalse
	if phase == corev1.PodRunning {
		ready = corev1.ConditionTrue
		pod.Status.ContainerStatuses = nil
		for _, c := range pod.Spec.Containers {
			pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
				Name: c.Name, Image: c.Image, Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			})
		}
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready, LastTransitionTime: now}}
	if _, err := a.Kube.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("setting pod %s/%s %s: %w", pod.Namespace, pod.Name, phase, err)
	}
	return nil
}

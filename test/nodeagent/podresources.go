package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// podResources serves the kubelet's pod-resources List as the kubelet
// does: the pods it has admitted and not yet seen end, and the one it is
// admitting, with the devices each container got so far.
type podResources struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	agent *Agent
}

// List returns the listed pods.
func (s *podResources) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	a := s.agent
	a.mu.Lock()
	defer a.mu.Unlock()
	resp := &podresourcesv1.ListPodResourcesResponse{}
	for uid, name := range a.listed {
		pod := &podresourcesv1.PodResources{Name: name.Name, Namespace: name.Namespace}
		for _, r := range a.results[uid] {
			if r.Resource == "" {
				continue
			}
			pod.Containers = append(pod.Containers, &podresourcesv1.ContainerResources{
				Name:    r.Container,
				Devices: []*podresourcesv1.ContainerDevices{{ResourceName: r.Resource, DeviceIds: r.DeviceIDs}},
			})
		}
		resp.PodResources = append(resp.PodResources, pod)
	}
	return resp, nil
}

// list adds the pod the agent begins to admit to what the pod-resources
// API lists, as the kubelet adds a pod to its pod manager before it
// admits it.
func (a *Agent) list(pod *corev1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.listed[pod.UID] = types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
}

// unlist removes a pod whose admission failed: the kubelet lists only
// active pods, and a rejected pod is Failed.
func (a *Agent) unlist(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.listed, uid)
}

// listenPodResources binds the pod-resources socket; the kubelet serves it
// before its device manager's kubelet.sock, so a plugin that finds the
// kubelet finds the API too.
func (a *Agent) listenPodResources() (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(a.PodResourcesSocket), 0o755); err != nil {
		return nil, err
	}
	if err := os.Remove(a.PodResourcesSocket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("removing the old pod-resources socket: %w", err)
	}
	l, err := net.Listen("unix", a.PodResourcesSocket)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", a.PodResourcesSocket, err)
	}
	return l, nil
}

// servePodResources serves the pod-resources API on l until ctx ends.
func (a *Agent) servePodResources(ctx context.Context, l net.Listener) error {
	server := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(server, &podResources{agent: a})
	go func() {
		<-ctx.Done()
		server.Stop()
	}()
	return server.Serve(l)
}

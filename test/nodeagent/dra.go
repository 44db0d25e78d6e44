package nodeagent

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// preparedClaim is a claim the agent prepared for a pod, by its driver.
type preparedClaim struct {
	driver string
	claim  *drapb.Claim
}

// claimDevices are a prepared claim's devices as its driver answered.
type claimDevices []*drapb.Device

// prepareClaims does the kubelet DRA manager's part for a pod: it resolves
// the pod's claims (those made from templates through the pod's status,
// and the one kube-scheduler made for DRA-backed extended resources),
// checks that each is allocated and reserved for the pod, asks each
// claim's drivers to prepare it through their registered plugins, and
// returns the CDI devices of each container, init containers first.
func (a *Agent) prepareClaims(ctx context.Context, pod *corev1.Pod) (map[string][]string, error) {
	claims := map[string]*resourceapi.ResourceClaim{} // pod's claim name → claim
	for _, pc := range pod.Spec.ResourceClaims {
		name, err := claimName(pod, pc)
		if err != nil {
			return nil, err
		}
		if name == "" {
			continue
		}
		claim, err := a.Kube.ResourceV1().ResourceClaims(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, retryable{fmt.Errorf("reading claim %s of pod %s/%s: %w", name, pod.Namespace, pod.Name, err)}
		}
		if !reservedFor(claim, pod) {
			return nil, retryable{fmt.Errorf("claim %s is not allocated and reserved for pod %s/%s", name, pod.Namespace, pod.Name)}
		}
		claims[pc.Name] = claim
	}
	// The claim kube-scheduler made for extended resources a DeviceClass
	// maps (such as nvidia.com/gpu on a node with no device plugin for it).
	ext := pod.Status.ExtendedResourceClaimStatus
	if ext != nil {
		claim, err := a.Kube.ResourceV1().ResourceClaims(pod.Namespace).Get(ctx, ext.ResourceClaimName, metav1.GetOptions{})
		if err != nil {
			return nil, retryable{fmt.Errorf("reading claim %s of pod %s/%s: %w", ext.ResourceClaimName, pod.Namespace, pod.Name, err)}
		}
		if !reservedFor(claim, pod) {
			return nil, retryable{fmt.Errorf("claim %s is not allocated and reserved for pod %s/%s", claim.Name, pod.Namespace, pod.Name)}
		}
		claims[extendedClaim] = claim
	}
	devices := map[string]claimDevices{} // pod's claim name → devices
	for podClaim, claim := range claims {
		var drivers []string
		for _, r := range claim.Status.Allocation.Devices.Results {
			if !slices.Contains(drivers, r.Driver) {
				drivers = append(drivers, r.Driver)
			}
		}
		for _, driver := range drivers {
			ref := &drapb.Claim{Namespace: claim.Namespace, Uid: string(claim.UID), Name: claim.Name}
			got, err := a.prepare(ctx, driver, ref)
			if err != nil {
				return nil, err
			}
			a.mu.Lock()
			if !slices.ContainsFunc(a.claims[pod.UID], func(p preparedClaim) bool { return p.driver == driver && p.claim.Uid == ref.Uid }) {
				a.claims[pod.UID] = append(a.claims[pod.UID], preparedClaim{driver: driver, claim: ref})
			}
			a.mu.Unlock()
			devices[podClaim] = append(devices[podClaim], got...)
		}
	}
	out := map[string][]string{}
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		uses := slices.Clone(c.Resources.Claims)
		if ext != nil {
			for _, m := range ext.RequestMappings {
				if m.ContainerName == c.Name {
					uses = append(uses, corev1.ResourceClaim{Name: extendedClaim, Request: m.RequestName})
				}
			}
		}
		for _, rc := range uses {
			for _, d := range devices[rc.Name] {
				if rc.Request == "" || len(d.RequestNames) == 0 || slices.Contains(d.RequestNames, rc.Request) {
					out[c.Name] = append(out[c.Name], d.CdiDeviceIds...)
				}
			}
		}
	}
	return out, nil
}

// extendedClaim is the agent's own name for a pod's extended-resource
// claim, which the pod's spec does not list; no pod claim name has a slash.
const extendedClaim = "extended/resources"

// reservedFor says whether the claim is allocated and reserved for the pod,
// as the kubelet requires before preparing it.
func reservedFor(claim *resourceapi.ResourceClaim, pod *corev1.Pod) bool {
	return claim.Status.Allocation != nil && slices.ContainsFunc(claim.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == pod.UID })
}

// draBacked says whether the container's extended resource is served by a
// DRA driver through the pod's extended-resource claim, so that no device
// plugin is asked for it, as the kubelet's device manager skips it.
func draBacked(pod *corev1.Pod, container, resource string) bool {
	ext := pod.Status.ExtendedResourceClaimStatus
	return ext != nil && slices.ContainsFunc(ext.RequestMappings, func(m corev1.ContainerExtendedResourceRequest) bool {
		return m.ContainerName == container && m.ResourceName == resource
	})
}

// claimName is the ResourceClaim a pod's claim stands for; "" when the
// pod needs none.
func claimName(pod *corev1.Pod, pc corev1.PodResourceClaim) (string, error) {
	if pc.ResourceClaimName != nil {
		return *pc.ResourceClaimName, nil
	}
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.Name == pc.Name {
			if s.ResourceClaimName == nil {
				return "", nil
			}
			return *s.ResourceClaimName, nil
		}
	}
	return "", retryable{fmt.Errorf("the claim of pod %s/%s for %s has not been made yet", pod.Namespace, pod.Name, pc.Name)}
}

// prepare calls NodePrepareResources of the driver for one claim.
func (a *Agent) prepare(ctx context.Context, driver string, claim *drapb.Claim) (claimDevices, error) {
	client, err := a.draClient(ctx, driver)
	if err != nil {
		return nil, err
	}
	resp, err := client.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{claim}})
	if err != nil {
		return nil, retryable{fmt.Errorf("preparing claim %s/%s with driver %s: %w", claim.Namespace, claim.Name, driver, err)}
	}
	r := resp.Claims[claim.Uid]
	switch {
	case r == nil:
		return nil, retryable{fmt.Errorf("driver %s did not answer for claim %s/%s", driver, claim.Namespace, claim.Name)}
	case r.Error != "":
		return nil, retryable{fmt.Errorf("driver %s could not prepare claim %s/%s: %s", driver, claim.Namespace, claim.Name, r.Error)}
	}
	return r.Devices, nil
}

// unprepareClaims asks the drivers to unprepare the pod's claims that no
// other pod on the node still uses, as the kubelet does once a pod's
// containers are gone. A claim whose driver fails stays the pod's, for
// the reconcile loop to try again.
func (a *Agent) unprepareClaims(ctx context.Context, uid types.UID) {
	a.mu.Lock()
	claims := a.claims[uid]
	delete(a.claims, uid)
	var inUse []string
	for _, other := range a.claims {
		for _, p := range other {
			inUse = append(inUse, p.claim.Uid)
		}
	}
	a.mu.Unlock()
	var failed []preparedClaim
	for _, p := range claims {
		if slices.Contains(inUse, p.claim.Uid) {
			continue
		}
		client, err := a.draClient(ctx, p.driver)
		if err == nil {
			var resp *drapb.NodeUnprepareResourcesResponse
			resp, err = client.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: []*drapb.Claim{p.claim}})
			if err == nil && resp.Claims[p.claim.Uid] != nil && resp.Claims[p.claim.Uid].Error != "" {
				err = fmt.Errorf("%s", resp.Claims[p.claim.Uid].Error)
			}
		}
		if err != nil {
			klog.FromContext(ctx).Error(err, "Unpreparing a claim failed, will retry", "driver", p.driver, "claim", klog.KRef(p.claim.Namespace, p.claim.Name))
			failed = append(failed, p)
		}
	}
	if len(failed) > 0 {
		a.mu.Lock()
		a.claims[uid] = append(a.claims[uid], failed...)
		a.mu.Unlock()
	}
}

// draClient connects to the driver's plugin the way the kubelet finds it:
// through the registration socket <driver>-reg.sock in the plugin
// registry directory, whose GetInfo names the plugin's endpoint.
func (a *Agent) draClient(ctx context.Context, driver string) (drapb.DRAPluginClient, error) {
	a.mu.Lock()
	conn := a.draConns[driver]
	a.mu.Unlock()
	if conn != nil {
		return drapb.NewDRAPluginClient(conn), nil
	}
	if a.PluginRegistryDir == "" {
		return nil, fmt.Errorf("claims of driver %s, but the agent has no plugin registry directory", driver)
	}
	regConn, err := grpc.NewClient("unix://"+filepath.Join(a.PluginRegistryDir, driver+"-reg.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, retryable{fmt.Errorf("connecting to the registration of driver %s: %w", driver, err)}
	}
	defer regConn.Close()
	reg := registerapi.NewRegistrationClient(regConn)
	info, err := reg.GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		return nil, retryable{fmt.Errorf("driver %s has not registered: %w", driver, err)}
	}
	if info.Type != registerapi.DRAPlugin || info.Name != driver {
		return nil, fmt.Errorf("the registration socket of driver %s announces %s plugin %s", driver, info.Type, info.Name)
	}
	conn, err = grpc.NewClient("unix://"+info.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, retryable{fmt.Errorf("connecting to driver %s at %s: %w", driver, info.Endpoint, err)}
	}
	if _, err := reg.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		_ = conn.Close()
		return nil, retryable{fmt.Errorf("confirming the registration of driver %s: %w", driver, err)}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if old := a.draConns[driver]; old != nil {
		_ = conn.Close()
		return drapb.NewDRAPluginClient(old), nil
	}
	a.draConns[driver] = conn
	return drapb.NewDRAPluginClient(conn), nil
}
